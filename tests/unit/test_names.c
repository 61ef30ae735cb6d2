/* The rules of names (src/common/names.c) that the daemon, deferctl and libdeferd share. */
#include <string.h>

#include "check.h"
#include "names.h"

static void queues(void)
{
    static const char *const good[] = {"a", "emails", "A.b_c-d", "0", "q.", "a..b",
        "1234567890123456789012345678901234567890123456789012345678901234"};
    static const char *const bad[] = {"", ".a", "a/b", "a b", "a:b", "a@b", "a\tb", "\xc3\xa9",
        "12345678901234567890123456789012345678901234567890123456789012345"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        CHECK(names_valid_queue(good[i]) && names_valid_queue_n(good[i], strlen(good[i])));
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(!names_valid_queue(bad[i]) && !names_valid_queue_n(bad[i], strlen(bad[i])));
    CHECK(names_valid_queue_n("emails,jobs", 6) && !names_valid_queue_n("emails,jobs", 7));
}

/* Only the shape: the daemon parses the name itself (layout_parse_id, Curator ids). */
static void job_ids(void)
{
    static const char *const good[] = {"q/1-2-abc", "q/s1/1-2-abc", "q/x", "emails/a:b@c~!"};
    static const char *const bad[] = {"", "q", "q/", "/x", ".q/x", "q//x", "q/x/", "q/a/b/c",
        "q/a b", "q/a\tb", "q/\x7f", "q x/y"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        CHECK(names_valid_job_id(good[i]));
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(!names_valid_job_id(bad[i]));
    char id[300];
    memset(id, 'a', sizeof id);
    id[0] = 'q';
    id[1] = '/';
    id[240] = '\0';
    CHECK(names_valid_job_id(id));
    id[240] = 'a';
    id[241] = '\0';
    CHECK(!names_valid_job_id(id));
    CHECK(names_valid_job_id_n("q/x y", 3) && !names_valid_job_id_n("q/x y", 4));
}

int main(void)
{
    queues();
    job_ids();
    return check_report("names");
}
