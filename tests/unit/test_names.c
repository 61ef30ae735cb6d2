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

/* The uid is the name's third field, wherever the job lives and whatever follows it. */
static void job_uids(void)
{
    static const struct { const char *id, *uid; } good[] = {
        {"q/1763769605123-10-5f1e0c2a9b3d4e01", "5f1e0c2a9b3d4e01"},
        {"q/s1a2b3c4d-0/1-0-abc-a2-t30000-kK-1", "abc"},
        {"q/1-2-z-a1", "z"},
        {"q/1-2-0123456789abcdefghijklmnopqrstuv", "0123456789abcdefghijklmnopqrstuv"},
    };
    static const char *const bad[] = {"q/queue-|1A2016B292A|0000001999#2", "q/1-2-",
        "q/1-2", "q/x-2-abc", "q/1-x-abc", "q/1-2-ABC", "q/1-2-a_b", "q/-1-2-abc", "q/1--abc",
        "q/1-2-0123456789abcdefghijklmnopqrstuvw", "nothing", ""};
    char uid[NAMES_UID_MAX + 1];
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        CHECK(names_job_uid(good[i].id, uid, sizeof uid) == 0);
        CHECK_STR(uid, good[i].uid);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(names_job_uid(bad[i], uid, sizeof uid) == -1);
    }
    CHECK(names_job_uid("q/1-2-abc", uid, 4) == 0 && names_job_uid("q/1-2-abc", uid, 3) == -1);
}

static void job_groups(void)
{
    char g[NAMES_GROUP_MAX + 1];
    CHECK(names_job_group("q/1-2-abc-a3-t9000-gstripe~17-kx-y", g, sizeof g) == 0);
    CHECK_STR(g, "stripe-17");
    CHECK(names_job_group("q/s1/1-2-abc-gA.b:c@d", g, sizeof g) == 0);
    CHECK_STR(g, "A.b:c@d");
    CHECK(names_job_group("q/1-2-abc-kg-x", g, sizeof g) == 0); /* a key, not a group */
    CHECK_STR(g, "");
    CHECK(names_job_group("q/1-2-abc", g, sizeof g) == 0 && g[0] == '\0');
    CHECK(names_job_group("q/1-2-abc-gxyz", g, 3) == -1);
    CHECK(names_job_group("q/1-2-abc-g", g, sizeof g) == -1);
    CHECK(names_job_group("not an id", g, sizeof g) == -1);
    CHECK(names_valid_group("stripe-17") && !names_valid_group("-x") && !names_valid_group("") &&
          !names_valid_group("a b") && !names_valid_group("123456789012345678901234567890123"));
}

/* The results a released on=complete parent's id carries (-r<acked>.<dead>): the same as
 * layout.c reads from the name. */
static void job_flow_results(void)
{
    uint32_t a = 7, d = 7;
    CHECK(names_job_flow_results("q/1-2-abc-gx-fp0-r998.2", &a, &d) == 1 && a == 998 && d == 2);
    CHECK(names_job_flow_results("q/s1/1-2-abc-a1-fp-r0.4294967295", &a, &d) == 1 && a == 0 &&
          d == 4294967295u);
    CHECK(names_job_flow_results("q/1-2-abc-a3-gx", &a, &d) == 0);
    CHECK(names_job_flow_results("q/1-2-abc-kr1.2", &a, &d) == 0); /* a key, not results */
    const char *bad[] = {"q/1-2-abc-r1", "q/1-2-abc-r1.", "q/1-2-abc-r.1", "q/1-2-abc-r01.1",
                         "q/1-2-abc-r1.4294967296", "q/1-2-abc-r1.2x", "not an id"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECK(names_job_flow_results(bad[i], &a, &d) == -1);
}

int main(void)
{
    job_flow_results();
    job_groups();
    queues();
    job_ids();
    job_uids();
    return check_report("names");
}
