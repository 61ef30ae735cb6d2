/* The payload stash (src/daemon/engine/stash.c): bounded in bytes (the oldest make room, a payload
 * that cannot fit is refused and stays the caller's) and in time (expired ones go first),
 * one payload per path, taken at most once. */
#include <stdlib.h>

#include "check.h"
#include "stash.h"

static unsigned char *payload(size_t len, char fill)
{
    unsigned char *p = malloc(len ? len : 1);
    if (!p)
        exit(1);
    memset(p, fill, len);
    return p;
}

/* PATH's payload is there, LEN bytes of FILL: taken (and freed) now. */
static int holds(struct stash *s, const char *path, size_t len, char fill)
{
    size_t got = 0;
    unsigned char *p = stash_take(s, path, &got);
    int ok = p && got == len;
    for (size_t i = 0; ok && i < len; i++)
        ok = p[i] == (unsigned char)fill;
    free(p);
    return ok;
}

int main(void)
{
    const int64_t now = 1000000, later = now + 60000;
    struct stash *s = stash_new(100);
    size_t len = 99;
    CHECK(stash_take(s, "/none", &len) == NULL && len == 99);
    CHECK(stash_put(s, "/a", payload(40, 'a'), 40, later, now) == 0);
    CHECK(stash_put(s, "/b", payload(40, 'b'), 40, later, now) == 0);
    unsigned char *dup = payload(10, 'd');
    CHECK(stash_put(s, "/a", dup, 10, later, now) == -1); /* one per path: refused, ours */
    free(dup);
    CHECK(holds(s, "/a", 40, 'a'));
    CHECK(stash_take(s, "/a", &len) == NULL); /* handed over once */

    /* bytes: the oldest make room; a payload over the whole bound is refused */
    CHECK(stash_put(s, "/c", payload(40, 'c'), 40, later, now) == 0);
    CHECK(stash_put(s, "/d", payload(30, 'd'), 30, later, now) == 0); /* b goes */
    CHECK(stash_take(s, "/b", &len) == NULL);
    CHECK(holds(s, "/c", 40, 'c'));
    CHECK(stash_put(s, "/e", payload(70, 'e'), 70, later, now) == 0); /* fits beside d */
    CHECK(holds(s, "/d", 30, 'd') && holds(s, "/e", 70, 'e'));
    CHECK(stash_put(s, "/f", payload(100, 'f'), 100, later, now) == 0); /* exactly the bound */
    unsigned char *huge = payload(101, 'h');
    CHECK(stash_put(s, "/huge", huge, 101, later, now) == -1);
    free(huge);
    CHECK(stash_take(s, "/huge", &len) == NULL);
    CHECK(stash_put(s, "/z", payload(0, 'z'), 0, later, now) == 0); /* empty payloads too */
    CHECK(holds(s, "/z", 0, 'z'));
    stash_free(s); /* frees what it still holds (ASan's leak check) */

    /* time: an expired entry goes at the next put, though there is room (the entries are
     * kept in the order they came, which is taken as the order they expire in) */
    s = stash_new(1000);
    CHECK(stash_put(s, "/old", payload(10, 'o'), 10, now + 5, now) == 0);
    CHECK(stash_put(s, "/new", payload(10, 'n'), 10, now + 500, now) == 0);
    CHECK(stash_put(s, "/x", payload(10, 'x'), 10, now + 500, now + 5) == 0); /* not yet */
    CHECK(holds(s, "/old", 10, 'o'));
    stash_free(s);
    s = stash_new(1000);
    CHECK(stash_put(s, "/old", payload(10, 'o'), 10, now + 5, now) == 0);
    CHECK(stash_put(s, "/new", payload(10, 'n'), 10, now + 500, now) == 0);
    CHECK(stash_put(s, "/y", payload(10, 'y'), 10, now + 900, now + 6) == 0);
    CHECK(stash_take(s, "/old", &len) == NULL);
    CHECK(holds(s, "/new", 10, 'n') && holds(s, "/y", 10, 'y'));
    stash_free(s);
    stash_free(NULL);

    /* many: never more bytes than the bound, the newest kept */
    s = stash_new(1000);
    char path[32];
    for (int i = 0; i < 500; i++) {
        snprintf(path, sizeof path, "/j/%d", i);
        CHECK(stash_put(s, path, payload(30, 'm'), 30, later, now) == 0);
    }
    size_t total = 0;
    int kept = 0;
    for (int i = 0; i < 500; i++) {
        snprintf(path, sizeof path, "/j/%d", i);
        unsigned char *p = stash_take(s, path, &len);
        if (p) {
            kept++;
            total += len;
            CHECK(i >= 500 - 33); /* only the newest */
        }
        free(p);
    }
    CHECK(kept == 33 && total == 990);
    stash_free(s);

    /* the index: thousands of paths, taken out of order (each take moves back the slots
     * after it), every one found until taken and never after; the rest freed by stash_free */
    s = stash_new(1u << 30);
    enum { MANY = 20000 };
    for (int i = 0; i < MANY; i++) {
        snprintf(path, sizeof path, "/q/jobs/%d-%d", i % 97, i);
        CHECK(stash_put(s, path, payload(1, (char)i), 1, later, now) == 0);
    }
    int ok = 1;
    for (int pass = 0; pass < 3; pass++)
        for (int i = pass; i < MANY; i += 3) {
            snprintf(path, sizeof path, "/q/jobs/%d-%d", i % 97, i);
            if (pass < 2 || i % 2)
                ok &= holds(s, path, 1, (char)i);
        }
    for (int i = 0; i < MANY; i++) { /* only pass 2's even ones are left */
        snprintf(path, sizeof path, "/q/jobs/%d-%d", i % 97, i);
        unsigned char *p = stash_take(s, path, &len);
        ok &= (p != NULL) == (i % 3 == 2 && i % 2 == 0);
        free(p);
    }
    CHECK(ok);
    CHECK(stash_put(s, "/again", payload(5, 'a'), 5, later, now) == 0); /* after shrinking */
    CHECK(holds(s, "/again", 5, 'a'));
    for (int i = 0; i < 1000; i++) { /* left for stash_free */
        snprintf(path, sizeof path, "/left/%d", i);
        CHECK(stash_put(s, path, payload(3, 'l'), 3, later, now) == 0);
    }
    stash_free(s);
    return check_report("stash");
}
