/* The znode layout codec: names and paths round-trip, foreign names are refused. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "jobedit.h"
#include "layout.h"
#include "names.h"

static void round_trips(void)
{
    srand(7);
    for (int i = 0; i < 5000; i++) {
        struct job_name a = {0}, b;
        a.due_ms = ((uint64_t)rand() << 20 ^ (uint64_t)rand()) % (LAYOUT_DUE_MAX + 1);
        a.priority = (uint32_t)rand() * 2u + (uint32_t)(rand() & 1);
        a.prior_attempts = (i % 3) ? 0 : (uint32_t)rand() + 1;
        a.ttr_ms = (i % 5) ? 0 : (uint32_t)rand() + 1;
        a.short_buckets = i % 2;
        snprintf(a.uid, sizeof a.uid, "%x%x", rand(), i);
        char name[LAYOUT_NAME_MAX + 1], id[LAYOUT_ID_MAX + 1], q[65];
        CHECK(layout_format_name(&a, name, sizeof name) == 0);
        CHECK(layout_parse_name(name, &b) == 0);
        CHECK(a.due_ms == b.due_ms && a.priority == b.priority &&
              a.prior_attempts == b.prior_attempts && a.ttr_ms == b.ttr_ms &&
              a.short_buckets == b.short_buckets);
        CHECK_STR(a.uid, b.uid);
        CHECK(layout_format_id(id, sizeof id, "emails", name) == 0);
        CHECK(layout_parse_id(id, q, sizeof q, &b) == 0);
        CHECK_STR(q, "emails");
        uint64_t leaf = layout_bucket_of(a.due_ms, 3);
        CHECK(layout_job_in_bucket(&a, leaf, a.short_buckets ? LAYOUT_FORM_SHORT
                                                             : LAYOUT_FORM_FULL));
        CHECK(layout_job_in_bucket(&a, leaf, LAYOUT_FORM_EITHER));
        CHECK(!layout_job_in_bucket(&a, leaf, a.short_buckets ? LAYOUT_FORM_FULL
                                                              : LAYOUT_FORM_SHORT));
    }
}

static void paths(void)
{
    struct job_name jn = {.due_ms = 1763769605123ULL, .priority = 10, .uid = "abc"};
    char buf[LAYOUT_PATH_MAX];
    CHECK(layout_job_path(buf, sizeof buf, "/deferd", "emails", &jn) == 0);
    CHECK_STR(buf, "/deferd/queues/emails/jobs/176376/17637696/17637696051/1763769605123-10-abc");
    CHECK(layout_bucket_path(buf, sizeof buf, "/r", "q", jn.due_ms, 0, 0) == 0);
    CHECK_STR(buf, "/r/queues/q/jobs");
    uint64_t v;
    CHECK(layout_parse_bucket("176376", 1, 0, &v) == LAYOUT_FORM_EITHER && v == 176376);
    CHECK(layout_parse_bucket("17637696", 2, 176376, &v) == LAYOUT_FORM_FULL && v == 17637696);
    CHECK(layout_parse_bucket("17637696", 2, 176377, &v) < 0); /* wrong parent */
    CHECK(layout_parse_bucket("17637696051", 3, 17637696, &v) == LAYOUT_FORM_FULL);
    CHECK(layout_parse_bucket("017637696051", 3, 17637696, &v) < 0);
    CHECK(layout_parse_bucket("abc", 1, 0, &v) < 0);
    CHECK(layout_parse_bucket("", 1, 0, &v) < 0);
    CHECK(!layout_job_in_bucket(&jn, 17637696052ULL, LAYOUT_FORM_EITHER));
    char small[20];
    CHECK(layout_job_path(small, sizeof small, "/deferd", "emails", &jn) != 0);
}

/* Layout version 4: L2 and L3 named by their own digits, the name marked "-c". */
static void short_form(void)
{
    struct job_name jn = {.due_ms = 1763769605123ULL, .priority = 10, .uid = "abc",
                          .short_buckets = 1}, back;
    char buf[LAYOUT_PATH_MAX], id[LAYOUT_ID_MAX + 1], q[65];
    CHECK(layout_job_path(buf, sizeof buf, "/deferd", "emails", &jn) == 0);
    CHECK_STR(buf, "/deferd/queues/emails/jobs/176376/96/51/1763769605123-10-abc-c");
    CHECK(layout_job_id(id, sizeof id, "emails", &jn) == 0);
    CHECK_STR(id, "emails/1763769605123-10-abc-c");
    CHECK(layout_parse_id(id, q, sizeof q, &back) == 0 && back.short_buckets == 1);
    CHECK(layout_job_path(id, sizeof id, "/deferd", q, &back) == 0);
    CHECK_STR(id, buf); /* the id alone leads to the path */
    jn.prior_attempts = 2;
    jn.key[0] = 'k';
    CHECK(layout_format_name(&jn, buf, sizeof buf) == 0);
    CHECK_STR(buf, "1763769605123-10-abc-c-a2-kk");
    CHECK(layout_parse_name("1763769605123-10-abc-a2-c", &back) != 0); /* out of order */
    CHECK(layout_parse_name("1763769605123-10-abc-cc", &back) != 0);
    CHECK(layout_parse_name("1763769605123-10-abc-c-c", &back) != 0);

    uint64_t v;
    CHECK(layout_parse_bucket("96", 2, 176376, &v) == LAYOUT_FORM_SHORT && v == 17637696);
    CHECK(layout_parse_bucket("17637696", 2, 176376, &v) == LAYOUT_FORM_FULL && v == 17637696);
    CHECK(layout_parse_bucket("51", 3, 17637696, &v) == LAYOUT_FORM_SHORT && v == 17637696051);
    CHECK(layout_parse_bucket("999", 3, 17637696, &v) == LAYOUT_FORM_SHORT && v == 17637696999);
    CHECK(layout_parse_bucket("100", 2, 176376, &v) < 0); /* neither form */
    CHECK(layout_parse_bucket("05", 2, 176376, &v) < 0);   /* not canonical */
    CHECK(layout_parse_bucket("176376", 1, 0, &v) == LAYOUT_FORM_EITHER);
    /* under a bucket of value 0 the two forms are one name */
    CHECK(layout_parse_bucket("7", 2, 0, &v) == LAYOUT_FORM_EITHER && v == 7);
    CHECK(layout_parse_bucket("100", 2, 0, &v) < 0);
    CHECK(layout_bucket_path(buf, sizeof buf, "/r", "q", 150000, 3, 1) == 0);
    CHECK_STR(buf, "/r/queues/q/jobs/0/1/500");
    CHECK(layout_bucket_path(buf, sizeof buf, "/r", "q", 150000, 3, 0) == 0);
    CHECK_STR(buf, "/r/queues/q/jobs/0/1/1500");

    CHECK(layout_form_join(LAYOUT_FORM_EITHER, LAYOUT_FORM_SHORT) == LAYOUT_FORM_SHORT);
    CHECK(layout_form_join(LAYOUT_FORM_FULL, LAYOUT_FORM_EITHER) == LAYOUT_FORM_FULL);
    CHECK(layout_form_join(LAYOUT_FORM_SHORT, LAYOUT_FORM_SHORT) == LAYOUT_FORM_SHORT);
    CHECK(layout_form_join(LAYOUT_FORM_SHORT, LAYOUT_FORM_FULL) < 0);
    CHECK(layout_form_join(LAYOUT_FORM_FULL, LAYOUT_FORM_SHORT) < 0);

    /* a name that fit before the field fits with it: 150 bytes, then 152 */
    struct job_name longest = {.due_ms = 1763769605123ULL, .priority = 4294967295u,
                               .uid = "0123456789abcdefghijklmnopqrstuv"};
    memset(longest.key, 'k', LAYOUT_KEY_MAX);
    memset(longest.group, 'g', 150 - 13 - 1 - 10 - 1 - 32 - (2 + LAYOUT_KEY_MAX) - 2);
    CHECK(layout_format_name(&longest, buf, sizeof buf) == 0 && strlen(buf) == 150);
    longest.short_buckets = 1;
    CHECK(layout_format_name(&longest, buf, sizeof buf) == 0 && strlen(buf) == 152);
    CHECK(layout_parse_name(buf, &back) == 0 && back.short_buckets);
    CHECK(layout_job_path(buf, sizeof buf, "/deferd", "emails", &longest) == 0);
    /* ...but a full-form name stays within 150, as older daemons read it */
    longest.short_buckets = 0;
    longest.group[strlen(longest.group)] = 'g';
    CHECK(layout_format_name(&longest, buf, sizeof buf) != 0);
    longest.short_buckets = 1;
    CHECK(layout_format_name(&longest, buf, sizeof buf) != 0); /* 153 */
    /* every field at once: nine before the key */
    static const char all[] = "1700000000123-5-abc-c-a2-t3000-gg1-fpp-r1.0-kkey-1";
    CHECK(layout_parse_name(all, &back) == 0 && back.short_buckets && back.prior_attempts == 2 &&
          back.ttr_ms == 3000 && back.has_results && strcmp(back.key, "key-1") == 0);
    CHECK(layout_format_name(&back, buf, sizeof buf) == 0);
    CHECK_STR(buf, all);

    jn.key[0] = '\0';
    CHECK(layout_job_in_bucket(&jn, 17637696051ULL, LAYOUT_FORM_SHORT));
    CHECK(!layout_job_in_bucket(&jn, 17637696051ULL, LAYOUT_FORM_FULL));
    jn.short_buckets = 0;
    CHECK(layout_job_in_bucket(&jn, 17637696051ULL, LAYOUT_FORM_FULL));
    CHECK(!layout_job_in_bucket(&jn, 17637696051ULL, LAYOUT_FORM_SHORT));
}

static void shards(void)
{
    struct job_name jn = {.due_ms = 1763769605123ULL, .priority = 10, .uid = "abc",
                          .shard = "s1a2b3c4d-3"}, back;
    char buf[LAYOUT_PATH_MAX], id[LAYOUT_ID_MAX + 1], q[65];
    CHECK(layout_job_path(buf, sizeof buf, "/deferd", "emails", &jn) == 0);
    CHECK_STR(buf, "/deferd/queues/emails/jobs/176376/17637696/17637696051/s1a2b3c4d-3/"
                   "1763769605123-10-abc");
    CHECK(layout_job_id(id, sizeof id, "emails", &jn) == 0);
    CHECK_STR(id, "emails/s1a2b3c4d-3/1763769605123-10-abc");
    CHECK(layout_parse_id(id, q, sizeof q, &back) == 0);
    CHECK_STR(back.shard, "s1a2b3c4d-3");
    CHECK(back.due_ms == jn.due_ms && back.priority == 10);
    jn.shard[0] = '\0';
    CHECK(layout_job_id(id, sizeof id, "emails", &jn) == 0);
    CHECK_STR(id, "emails/1763769605123-10-abc");
    CHECK(layout_parse_id(id, q, sizeof q, &back) == 0 && back.shard[0] == '\0');
    CHECK(layout_valid_shard("s0") && !layout_valid_shard("s") && !layout_valid_shard("x1"));
    CHECK(!layout_valid_shard("sA") && !layout_valid_shard("s123456789012345678901234"));
    CHECK(layout_parse_id("q/t1/1-2-abc", q, sizeof q, &back) != 0);  /* not a shard */
    CHECK(layout_parse_id("q/s1/2/1-2-abc", q, sizeof q, &back) != 0); /* two levels */
    CHECK(layout_parse_name("s1a2b3c4d-3", &back) != 0);              /* never a job */
}

/* layout_job_path_id (a put's naming: the name formatted once) gives what the two apart
 * give, with and without a shard, and fails as they do. */
static void path_and_id(void)
{
    struct job_name jn = {.due_ms = 1763769605123ULL, .priority = 10, .uid = "abc",
                          .ttr_ms = 3000, .group = "t-1"};
    char p1[LAYOUT_PATH_MAX], p2[LAYOUT_PATH_MAX], i1[LAYOUT_ID_MAX + 1], i2[LAYOUT_ID_MAX + 1];
    for (int shard = 0; shard < 2; shard++) {
        snprintf(jn.shard, sizeof jn.shard, "%s", shard ? "s1a2b3c4d-3" : "");
        CHECK(layout_job_path_id(p1, sizeof p1, i1, sizeof i1, "/deferd", "emails", &jn) == 0);
        CHECK(layout_job_path(p2, sizeof p2, "/deferd", "emails", &jn) == 0);
        CHECK(layout_job_id(i2, sizeof i2, "emails", &jn) == 0);
        CHECK_STR(p1, p2);
        CHECK_STR(i1, i2);
    }
    CHECK_STR(i1, "emails/s1a2b3c4d-3/1763769605123-10-abc-t3000-gt~1");
    char small[20];
    CHECK(layout_job_path_id(small, sizeof small, i1, sizeof i1, "/deferd", "emails", &jn) != 0);
    CHECK(layout_job_path_id(p1, sizeof p1, small, sizeof small, "/deferd", "emails", &jn) != 0);
    snprintf(jn.shard, sizeof jn.shard, "x1"); /* not a shard's name */
    CHECK(layout_job_path_id(p1, sizeof p1, i1, sizeof i1, "/deferd", "emails", &jn) != 0);
}

static void foreign_names(void)
{
    static const char *bad[] = {
        "", "queue-0000000001", "lock", "1-2", "1-2-", "-1-2-abc", "01-2-abc", "1-02-abc",
        "1-2-ABC", "1-2-ab_c", "1-2-abc-0", "1-2-abc-01", "1-2-abc-1-2", "1-4294967296-abc",
        "1-2-abc-2", "1-2-abc-a0", "1-2-abc-a01", "1-2-abc-t5-a2", "1-2-abc-a1-a2",
        "1-2-abc-x5", "1-2-abc-a", "1-2-abc-a1-t1-t2", "1-2-abc-a4294967296",
        "99999999999999-1-abc", "1--2-abc", "1-2-abc-", "1-2-abcdefghijklmnopqrstuvwxyz0123456789",
        "1 -2-abc",
    };
    struct job_name jn;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = layout_parse_name(bad[i], &jn);
        CHECK(rc != 0);
        if (rc == 0)
            fprintf(stderr, "  accepted foreign name '%s'\n", bad[i]);
    }
    CHECK(layout_parse_name("0-0-0", &jn) == 0);
    CHECK(layout_parse_name("1-4294967295-z-a4294967295", &jn) == 0 &&
          jn.prior_attempts == UINT32_MAX && jn.ttr_ms == 0);
    CHECK(layout_parse_name("1-2-z-t30000", &jn) == 0 && jn.ttr_ms == 30000 && !jn.prior_attempts);
    CHECK(layout_parse_name("1-2-z-a3-t30000", &jn) == 0 && jn.ttr_ms == 30000 &&
          jn.prior_attempts == 3);
    char q[65];
    CHECK(layout_parse_id("nosuchslash", q, sizeof q, &jn) != 0);
    CHECK(layout_parse_id("bad queue/1-2-abc", q, sizeof q, &jn) != 0);
    CHECK(layout_parse_id("/1-2-abc", q, sizeof q, &jn) != 0);
    CHECK(layout_parse_id("q/1-2-abc/x", q, sizeof q, &jn) != 0);
    char data[240]; /* key node data from ZooKeeper, one byte too long for any id */
    memset(data, 'a', sizeof data);
    CHECK(layout_parse_key_data(data, 239, &jn) != 0 && layout_parse_key_data(data, 240, &jn) != 0);
}

/* Keys: "-k<key>" comes last and may hold dashes; a 'k' inside the uid or a tag is not one. */
static void keys(void)
{
    static const char *const good[] = {"a", "order-17", "user:42@example.com", "A.b_c-d",
        "0-k-1", "k", "1234567890123456789012345678901234567890123456789012345678901234"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        struct job_name a = {.due_ms = 1763769605123ULL, .priority = 10, .uid = "kk9",
                             .prior_attempts = (uint32_t)i, .ttr_ms = i % 2 ? 30000 : 0}, b;
        char name[LAYOUT_NAME_MAX + 1], id[LAYOUT_ID_MAX + 1], q[65];
        snprintf(a.key, sizeof a.key, "%s", good[i]);
        CHECK(names_valid_key(good[i]));
        CHECK(layout_format_name(&a, name, sizeof name) == 0);
        CHECK(layout_parse_name(name, &b) == 0);
        CHECK_STR(b.key, good[i]);
        CHECK_STR(b.uid, "kk9");
        CHECK(b.prior_attempts == a.prior_attempts && b.ttr_ms == a.ttr_ms);
        CHECK(layout_format_id(id, sizeof id, "emails", name) == 0);
        CHECK(layout_parse_id(id, q, sizeof q, &b) == 0);
        CHECK_STR(b.key, good[i]);
    }
    struct job_name jn;
    CHECK(layout_parse_name("1-2-kabc", &jn) == 0 && jn.key[0] == '\0');
    CHECK_STR(jn.uid, "kabc");
    CHECK(layout_parse_name("1-2-abk-a3-kx-y", &jn) == 0 && jn.prior_attempts == 3);
    CHECK_STR(jn.uid, "abk");
    CHECK_STR(jn.key, "x-y");
    CHECK(layout_parse_name("1-2-abc-t5-k-", &jn) != 0);  /* a key starts with a letter or digit */
    CHECK(layout_parse_name("1-2-abc-k", &jn) != 0);     /* empty key */
    CHECK(layout_parse_name("1-2-abc-kx-a3", &jn) == 0 && strcmp(jn.key, "x-a3") == 0);
    static const char *const bad[] = {"", "-a", ".a", "_a", ":a", "a/b", "a b", "a\tb", "a#b",
        "12345678901234567890123456789012345678901234567890123456789012345"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct job_name a = {.due_ms = 1, .priority = 2, .uid = "abc"};
        char name[LAYOUT_NAME_MAX + 1], path[LAYOUT_PATH_MAX];
        CHECK(!names_valid_key(bad[i]));
        snprintf(a.key, sizeof a.key, "%s", bad[i]);
        /* "" means no key; 65 bytes do not fit the field (parse and path refuse them) */
        CHECK(bad[i][0] == '\0' || strlen(bad[i]) > LAYOUT_KEY_MAX ||
              layout_format_name(&a, name, sizeof name) != 0);
        CHECK(layout_key_path(path, sizeof path, "/d", "q", bad[i]) != 0);
        snprintf(name, sizeof name, "1-2-abc-k%s", bad[i]);
        CHECK(layout_parse_name(name, &jn) != 0);
    }
}

/* keys/<3 lower-case hex digits>/<key>; the data names the job, shard included. */
static void key_nodes(void)
{
    char path[LAYOUT_PATH_MAX], data[LAYOUT_ID_MAX + 1];
    CHECK(layout_key_path(path, sizeof path, "/deferd", "emails", "order-17") == 0);
    const char *dir = path + strlen("/deferd/queues/emails/keys/");
    CHECK(strncmp(path, "/deferd/queues/emails/keys/", strlen("/deferd/queues/emails/keys/")) == 0);
    CHECK(strspn(dir, "0123456789abcdef") == 3 && dir[3] == '/');
    CHECK_STR(dir + 4, "order-17");
    char other[LAYOUT_PATH_MAX];
    CHECK(layout_key_path(other, sizeof other, "/x", "q", "order-17") == 0);
    CHECK(strncmp(other + strlen("/x/queues/q/keys/"), dir, 3) == 0); /* the key's own hash */
    char small[20];
    CHECK(layout_key_path(small, sizeof small, "/deferd", "emails", "order-17") != 0);

    struct job_name jn = {.due_ms = 1763769605123ULL, .priority = 10, .uid = "abc",
                          .prior_attempts = 2, .key = "order-17"}, back;
    CHECK(layout_key_data(data, sizeof data, &jn) == 0);
    CHECK_STR(data, "1763769605123-10-abc-a2-korder-17");
    CHECK(layout_parse_key_data(data, strlen(data), &back) == 0);
    CHECK(back.due_ms == jn.due_ms && back.prior_attempts == 2 && back.shard[0] == '\0');
    CHECK_STR(back.key, "order-17");
    snprintf(jn.shard, sizeof jn.shard, "s1a2b3c4d-0");
    CHECK(layout_key_data(data, sizeof data, &jn) == 0);
    CHECK_STR(data, "s1a2b3c4d-0/1763769605123-10-abc-a2-korder-17");
    CHECK(layout_parse_key_data(data, strlen(data), &back) == 0);
    CHECK_STR(back.shard, "s1a2b3c4d-0");
    CHECK_STR(back.key, "order-17");
    static const char *const junk[] = {"", "done 1763769605123 1-2-abc-kx", "emails/1-2-abc",
                                       "x/1-2-abc", "1-2-ABC"};
    for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++)
        CHECK(layout_parse_key_data(junk[i], strlen(junk[i]), &back) != 0);
    CHECK(layout_parse_key_data("1-2-abc\0x", 9, &back) != 0);
}

/* A kept key's data (key_retention): what settle writes, putset and the sweeper read. */
static void kept_keys(void)
{
    struct job_name jn = {.due_ms = 1763769605123ULL, .priority = 10, .uid = "abc",
                          .key = "order-17", .shard = "s1a2b3c4d-0"}, back;
    char data[LAYOUT_ID_MAX + 32];
    int64_t acked = 0;
    CHECK(layout_kept_key_data(data, sizeof data, 1763769700000LL, &jn) == 0);
    CHECK_STR(data, "done 1763769700000 s1a2b3c4d-0/1763769605123-10-abc-korder-17");
    CHECK(layout_parse_kept_key(data, strlen(data), &acked, &back) == 0);
    CHECK(acked == 1763769700000LL && back.due_ms == jn.due_ms);
    CHECK_STR(back.key, "order-17");
    CHECK_STR(back.shard, "s1a2b3c4d-0");
    CHECK(layout_kept_key_data(data, 20, 1763769700000LL, &jn) != 0); /* too small */
    CHECK(layout_kept_key_data(data, sizeof data, -1, &jn) != 0);
    /* a live job's key, garbage, signs, a missing or bad name, a NUL, an overflow: no kept
     * key, so never expired by anyone */
    static const char *const no[] = {
        "1763769605123-10-abc-korder-17", "done", "done ", "done 5", "done 5 ",
        "done -5 1-2-abc", "done +5 1-2-abc", "done x 1-2-abc", "done 5 emails/1-2-abc",
        "done 5 1-2-ABC", "Done 5 1-2-abc", "done 99999999999999999999 1-2-abc",
        "done 9223372036854775808 1-2-abc", "done 9223372036854775807 1-2-abc",
        "done 10000000000000 1-2-abc"};
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        CHECK(layout_parse_kept_key(no[i], strlen(no[i]), &acked, &back) != 0);
    CHECK(layout_parse_kept_key("done 5 1-2-abc\0", 15, &acked, &back) != 0);
    CHECK(layout_parse_kept_key("done 5 1-2-abc", 14, &acked, &back) == 0 && acked == 5);
    CHECK(layout_parse_kept_key("done 9999999999999 1-2-abc", 26, &acked, &back) == 0);
}

/* Layout version 2: pack names and paths, packed ids and key data, the root's marker. */
static void packs(void)
{
    struct pack_name pn = {.start_ms = 1763760000000ULL, .width_ms = 10000000, .uid = "5f1e"},
                     back;
    char name[LAYOUT_PACK_MAX + 1], buf[LAYOUT_PATH_MAX], id[LAYOUT_ID_MAX + 1], q[65];
    CHECK(layout_format_pack_name(&pn, name, sizeof name) == 0);
    CHECK_STR(name, "p1763760000000-10000000-5f1e");
    CHECK(layout_parse_pack_name(name, &back) == 0 && back.start_ms == pn.start_ms &&
          back.width_ms == pn.width_ms);
    CHECK_STR(back.uid, "5f1e");
    CHECK(layout_pack_path(buf, sizeof buf, "/deferd", "emails", name) == 0);
    CHECK_STR(buf, "/deferd/queues/emails/packs/176376/p1763760000000-10000000-5f1e");
    CHECK(layout_packs_path(buf, sizeof buf, "/deferd", "emails") == 0);
    CHECK_STR(buf, "/deferd/queues/emails/packs");
    static const char *const bad[] = {
        "1763769600000-10000000-5f1e", "p1763769600000-10000000", "p1763769600000-0-u",
        "p01763769600000-5000-u", "p1763769600000-05000-u", "p1763769600000-10000001-u",
        "p1763769600000-5000-", "p1763769600000-5000-UID", "p1763769600000-5000-a-b",
        "p1763779999000-2000-u", /* crosses into the next L1 bucket */
        "p-1-5000-u", "p99999999999999-5000-u",
        "p1-1-012345678901234567890123456789012"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(layout_parse_pack_name(bad[i], &back) != 0);
    struct job_name jn = {.due_ms = 1763761234567ULL, .priority = 10, .uid = "ab"}, job;
    snprintf(jn.pack, sizeof jn.pack, "%s", name);
    CHECK(layout_job_id(id, sizeof id, "emails", &jn) == 0);
    CHECK_STR(id, "emails/p1763760000000-10000000-5f1e/1763761234567-10-ab");
    CHECK(layout_parse_id(id, q, sizeof q, &job) == 0 && job.due_ms == jn.due_ms);
    CHECK_STR(job.pack, name);
    CHECK_STR(job.shard, "");
    CHECK(layout_key_data(buf, sizeof buf, &jn) == 0);
    CHECK_STR(buf, "p1763760000000-10000000-5f1e/1763761234567-10-ab");
    CHECK(layout_parse_key_data(buf, strlen(buf), &job) == 0);
    CHECK_STR(job.pack, name);
    /* a job outside its pack's window is no packed job */
    CHECK(layout_parse_id("emails/p1763769600000-5000-5f1e/1763769605000-10-ab", q, sizeof q,
                          &job) != 0);
    CHECK(layout_parse_id("emails/p1763769600000-5000-5f1e/1763769604999-10-ab", q, sizeof q,
                          &job) == 0);
    CHECK(layout_parse_marker("2", 1) == 2 && layout_parse_marker("2\n", 2) == 2);
    CHECK(layout_parse_marker("1", 1) == 1 && layout_parse_marker("", 0) == -1);
    CHECK(layout_parse_marker("02", 2) == -1 && layout_parse_marker("two", 3) == -1);
}

/* Put tokens: "<ms>-<8..32 of [0-9a-z]>", in the directory of their minute. */
static void tokens(void)
{
    char path[LAYOUT_PATH_MAX];
    uint64_t ms = 0;
    CHECK(names_valid_token("1763769605123-abcdef01", &ms) && ms == 1763769605123ULL);
    CHECK(names_valid_token("0-01234567890123456789012345678901", &ms) && ms == 0);
    const char *bad[] = {"", "-abcdefgh", "123", "123-", "123-abcdefg", "123-ABCDEFGH",
                         "123-abcdefgh-", "1234567890123456-abcdefgh", "12x-abcdefgh",
                         "1-012345678901234567890123456789012", "1-abcd efgh"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(!names_valid_token(bad[i], &ms));
        CHECK(layout_token_path(path, sizeof path, "/d", "q", bad[i]) != 0);
    }
    CHECK(layout_token_path(path, sizeof path, "/deferd", "emails", "1763769605123-abcdef01") == 0);
    CHECK_STR(path, "/deferd/queues/emails/tokens/29396160/1763769605123-abcdef01");
    char small[40];
    CHECK(layout_token_path(small, sizeof small, "/deferd", "emails", "1763769605123-abcdef01") != 0);
}

/* The builders every znode path comes from, and the parse of a queue's node. */
static void queue_nodes(void)
{
    char buf[LAYOUT_PATH_MAX], q[8], small[16];
    CHECK(layout_queue_path(buf, sizeof buf, "/r", NULL, NULL, NULL) == 0);
    CHECK_STR(buf, "/r/queues");
    CHECK(layout_queue_path(buf, sizeof buf, "/r", "q", NULL, NULL) == 0);
    CHECK_STR(buf, "/r/queues/q");
    CHECK(layout_queue_path(buf, sizeof buf, "/r", "q", LAYOUT_DEAD, NULL) == 0);
    CHECK_STR(buf, "/r/queues/q/dead");
    CHECK(layout_queue_path(buf, sizeof buf, "/r", "q", LAYOUT_COUNTS, "admin") == 0);
    CHECK_STR(buf, "/r/queues/q/counts/admin");
    CHECK(layout_queue_path(small, sizeof small, "/r", "q", LAYOUT_COUNTS, "admin") != 0);
    CHECK(layout_root_path(buf, sizeof buf, "/r", LAYOUT_DAEMONS, "d1") == 0);
    CHECK_STR(buf, "/r/daemons/d1");
    CHECK(layout_root_path(buf, sizeof buf, "/r", LAYOUT_MARKER, NULL) == 0);
    CHECK_STR(buf, "/r/layout");
    CHECK(layout_lock_path(buf, sizeof buf, "/r/j") == 0);
    CHECK_STR(buf, "/r/j/lock");
    CHECK(layout_owner_path(buf, sizeof buf, "/r/j", 0x1fULL, -1) == 0);
    CHECK_STR(buf, "/r/j/owner-1f-");
    CHECK(layout_owner_path(buf, sizeof buf, "/r/j", 0x1fULL, 7) == 0);
    CHECK_STR(buf, "/r/j/owner-1f-0000000007");
    CHECK(layout_queue_of("/r/queues/abc/paused", "/r", LAYOUT_PAUSED, q, sizeof q) == 0);
    CHECK_STR(q, "abc");
    CHECK(layout_queue_of("/r/queues/abcdefgh/paused", "/r", LAYOUT_PAUSED, q, sizeof q) == -2);
    CHECK(layout_queue_of("/r/queues//paused", "/r", LAYOUT_PAUSED, q, sizeof q) == -1);
    CHECK(layout_queue_of("/r/queues/a/b/paused", "/r", LAYOUT_PAUSED, q, sizeof q) == -1);
    CHECK(layout_queue_of("/r/queues/abc/pausedx", "/r", LAYOUT_PAUSED, q, sizeof q) == -1);
    CHECK(layout_queue_of("/s/queues/abc/paused", "/r", LAYOUT_PAUSED, q, sizeof q) == -1);
    CHECK(layout_queue_of("/r/queues/paused", "/r", LAYOUT_PAUSED, q, sizeof q) == -1);
}

/* Groups: "-g<group>" after the a and t tags, before the key; '-' written as '~'. */
static void groups(void)
{
    struct job_name a = {.due_ms = 1700000000000ULL, .priority = 5, .prior_attempts = 2,
                         .ttr_ms = 9000},
                    b;
    char name[LAYOUT_NAME_MAX + 1];
    strcpy(a.uid, "abc");
    strcpy(a.group, "stripe-17");
    strcpy(a.key, "k-1");
    CHECK(layout_format_name(&a, name, sizeof name) == 0);
    CHECK_STR(name, "1700000000000-5-abc-a2-t9000-gstripe~17-kk-1");
    CHECK(layout_parse_name(name, &b) == 0);
    CHECK_STR(b.group, "stripe-17");
    CHECK_STR(b.key, "k-1");
    CHECK(b.prior_attempts == 2 && b.ttr_ms == 9000);
    CHECK(layout_parse_name("1-2-abc-gx", &b) == 0 && strcmp(b.group, "x") == 0);
    CHECK(layout_parse_name("1-2-abc", &b) == 0 && b.group[0] == '\0');
    CHECK(layout_parse_name("1-2-abc-g", &b) != 0);      /* empty group */
    CHECK(layout_parse_name("1-2-abc-gx-a3", &b) != 0);  /* out of order */
    CHECK(layout_parse_name("1-2-abc-gx-gy", &b) != 0);  /* twice */
    CHECK(layout_parse_name("1-2-abc-g~x", &b) != 0);    /* starts with '-' */
    CHECK(layout_parse_name("1-2-abc-gx/y", &b) != 0);
    strcpy(a.group, "bad group");
    CHECK(layout_format_name(&a, name, sizeof name) != 0);
    strcpy(a.group, "123456789012345678901234567890123"); /* 33 */
    CHECK(layout_format_name(&a, name, sizeof name) != 0);
}

/* A flow's child names its flow (-f<parent uid>, after the group); the flow's node data
 * reads back; bad data is refused. */
static void flow_names(void)
{
    struct job_name jn = {.due_ms = 1700000000000ULL, .priority = 5}, back;
    char name[LAYOUT_NAME_MAX + 1], path[LAYOUT_PATH_MAX];
    strcpy(jn.uid, "abc123");
    strcpy(jn.group, "acme-1");
    strcpy(jn.flow, "p0p0p0");
    CHECK(layout_format_name(&jn, name, sizeof name) == 0);
    CHECK_STR(name, "1700000000000-5-abc123-gacme~1-fp0p0p0");
    CHECK(layout_parse_name(name, &back) == 0);
    CHECK_STR(back.flow, "p0p0p0");
    CHECK_STR(back.group, "acme-1");
    CHECK(layout_parse_name("1700000000000-5-abc123-fp0-gx", &back) == -1); /* order */
    CHECK(layout_parse_name("1700000000000-5-abc123-f", &back) == -1);
    CHECK(layout_parse_name("1700000000000-5-abc123-fAB", &back) == -1);
    CHECK(layout_parse_name("1700000000000-5-abc123-a2-t5000-gg-fzz-kkey", &back) == 0);
    CHECK_STR(back.flow, "zz");
    CHECK_STR(back.key, "key");
    strcpy(jn.flow, "UP");
    CHECK(layout_format_name(&jn, name, sizeof name) == -1);
    struct layout_flow f = {.on_complete = 1, .pending = 3, .acked = 4, .dead = 1}, g;
    strcpy(f.parent, "reports/1700000000000-5-abc123");
    char data[400];
    CHECK(layout_flow_data(data, sizeof data, &f) == 0);
    CHECK_STR(data, "on=complete pending=3 acked=4 dead=1 parent=reports/1700000000000-5-abc123");
    CHECK(layout_parse_flow_data(data, strlen(data), &g) == 0);
    CHECK(g.on_complete && g.pending == 3 && g.acked == 4 && g.dead == 1);
    CHECK_STR(g.parent, f.parent);
    CHECK(layout_parse_flow_data(data, strlen(data) - 1, &g) == 0); /* a shorter parent id */
    CHECK(layout_parse_flow_data("on=maybe pending=1 acked=0 dead=0 parent=a/1-2-u", 48, &g) == -1);
    CHECK(layout_parse_flow_data("on=success pending=1 acked=0 dead=0 parent=nope", 47, &g) == -1);
    CHECK(layout_parse_flow_data("on=success pending=1 acked=0 dead=0 parent=a/1-2-u x", 52, &g) == -1);
    CHECK(layout_flow_path(path, sizeof path, "/d", "p0", NULL) == 0);
    CHECK_STR(path, "/d/flows/p0");
    CHECK(layout_flow_marker_path(path, sizeof path, "/d", "p0", "c1") == 0);
    CHECK_STR(path, "/d/flows/p0/c-c1");
    CHECK(layout_flow_path(path, sizeof path, "/d", NULL, NULL) == 0);
    CHECK_STR(path, "/d/flows");
}

/* A released on=complete parent's results (-r<acked>.<dead>, after the flow): built, read
 * back, kept by a move (nack with a delay); malformed ones make the name foreign. */
static void result_names(void)
{
    struct job_name jn = {.due_ms = 1700000000000ULL, .priority = 5}, back, moved;
    char name[LAYOUT_NAME_MAX + 1];
    strcpy(jn.uid, "abc123");
    strcpy(jn.flow, "up");
    jn.has_results = 1;
    jn.flow_acked = 998;
    jn.flow_dead = 0;
    CHECK(layout_format_name(&jn, name, sizeof name) == 0);
    CHECK_STR(name, "1700000000000-5-abc123-fup-r998.0");
    CHECK(layout_parse_name(name, &back) == 0);
    CHECK(back.has_results && back.flow_acked == 998 && back.flow_dead == 0);
    jobedit_next_name(&moved, &back, 1700000005000ULL, 1);
    CHECK(layout_format_name(&moved, name, sizeof name) == 0);
    CHECK_STR(name, "1700000005000-5-abc123-a1-fup-r998.0");
    CHECK(layout_parse_name("1700000000000-5-abc123-r3.4294967295-kk", &back) == 0);
    CHECK(back.flow_acked == 3 && back.flow_dead == 4294967295u && !back.flow[0]);
    CHECK(layout_parse_name("1700000000000-5-abc123", &back) == 0 && !back.has_results);
    const char *bad[] = {"1700000000000-5-abc123-r3", "1700000000000-5-abc123-r.1",
                         "1700000000000-5-abc123-r1.", "1700000000000-5-abc123-r01.1",
                         "1700000000000-5-abc123-r1.4294967296", "1700000000000-5-abc123-r1.2-fx",
                         "1700000000000-5-abc123-r1.2-r1.2", "1700000000000-5-abc123-r1.2.3"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECK(layout_parse_name(bad[i], &back) == -1);
}

/* Slot names of the limits: built and read back; other names are not slots. */
static void slot_names(void)
{
    char name[64];
    enum layout_slot_kind kind;
    const char *group;
    CHECK(layout_slot_name(name, sizeof name, LAYOUT_SLOT_CONCURRENCY, 3, "x") == 0);
    CHECK_STR(name, "c-3");
    CHECK(layout_slot_name(name, sizeof name, LAYOUT_SLOT_GROUP_RATE, 12, "acme~1") == 0);
    CHECK_STR(name, "gr-12-acme~1");
    CHECK(layout_parse_slot(name, &kind, &group) == 12 && kind == LAYOUT_SLOT_GROUP_RATE);
    CHECK_STR(group, "acme~1");
    CHECK(layout_parse_slot("g-0-r-1", &kind, &group) == 0 &&
          kind == LAYOUT_SLOT_GROUP_CONCURRENCY);
    CHECK_STR(group, "r-1");
    CHECK(layout_parse_slot("r-7", &kind, &group) == 7 && kind == LAYOUT_SLOT_RATE);
    CHECK_STR(group, "");
    CHECK(layout_parse_slot("r-7-x", &kind, &group) == -1);
    CHECK(layout_parse_slot("g-7", &kind, &group) == -1);
    CHECK(layout_parse_slot("gr-1-", &kind, &group) == -1);
    CHECK(layout_parse_slot("c-", &kind, &group) == -1);
    CHECK(layout_parse_slot("x-1", &kind, &group) == -1);
    CHECK(layout_parse_slot("c-99999999999", &kind, &group) == -1);
    CHECK(layout_slot_name(name, 4, LAYOUT_SLOT_GROUP_RATE, 1, "acme") == -1);
}

/* Claims (layout version 3): names round trip, anything else is refused. */
static void claim_names(void)
{
    char buf[LAYOUT_CLAIM_NAME_MAX], path[LAYOUT_PATH_MAX];
    uint64_t session, n;
    CHECK(layout_claim_name(buf, sizeof buf, 0x10004413675004eULL, 0x2a) == 0);
    CHECK_STR(buf, "010004413675004e-2a");
    CHECK(layout_parse_claim_name(buf, &session, &n) == 0 && session == 0x10004413675004eULL &&
          n == 0x2a);
    CHECK(layout_claim_name(buf, sizeof buf, UINT64_MAX, UINT64_MAX) == 0 &&
          layout_parse_claim_name(buf, &session, &n) == 0 && session == UINT64_MAX &&
          n == UINT64_MAX);
    const char *bad[] = {"", "010004413675004e", "010004413675004e-", "10004413675004e-2a",
                         "010004413675004e-02a", "010004413675004E-2a", "010004413675004e-+2a",
                         "010004413675004e-2a-", "010004413675004e-1ffffffffffffffff", "lock"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECK(layout_parse_claim_name(bad[i], &session, &n) == -1);
    CHECK(layout_session_path(path, sizeof path, "/d", 0xabcULL) == 0);
    CHECK_STR(path, "/d/sessions/0000000000000abc");
    CHECK(layout_session_path(path, sizeof path, "/d", 0) == 0);
    CHECK_STR(path, "/d/sessions");
}

/* The formatters write without snprintf (they run several times a put): the old snprintf
 * versions, kept here as the reference, must give the same text and the same refusals
 * for random names, with every buffer size from 1 byte to enough. */
static int ref_format_name(const struct job_name *jn, char *buf, size_t len)
{
    if (jn->due_ms > LAYOUT_DUE_MAX || !layout_valid_uid(jn->uid))
        return -1;
    int n = snprintf(buf, len, "%llu-%u-%s", (unsigned long long)jn->due_ms, jn->priority,
                     jn->uid);
    if (n > 0 && jn->prior_attempts && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, "-a%u", jn->prior_attempts);
    if (n > 0 && jn->ttr_ms && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, "-t%u", jn->ttr_ms);
    if (jn->group[0] && !names_valid_group(jn->group))
        return -1;
    if (n > 0 && jn->group[0] && (size_t)n + 2 + strlen(jn->group) < len) {
        n += snprintf(buf + n, len - (size_t)n, "-g");
        for (const char *g = jn->group; *g; g++)
            buf[n++] = *g == '-' ? '~' : *g;
        buf[n] = '\0';
    } else if (jn->group[0]) {
        return -1;
    }
    if (jn->flow[0] && !layout_valid_uid(jn->flow))
        return -1;
    if (n > 0 && jn->flow[0] && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, "-f%s", jn->flow);
    if (n > 0 && jn->has_results && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, "-r%u.%u", jn->flow_acked, jn->flow_dead);
    if (jn->key[0] && !names_valid_key(jn->key))
        return -1;
    if (n > 0 && jn->key[0] && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, "-k%s", jn->key);
    return n > 0 && (size_t)n < len ? 0 : -1;
}

static int ref_job_path(char *buf, size_t len, const char *root, const char *queue,
                        const struct job_name *jn)
{
    char name[LAYOUT_NAME_MAX + 1];
    if (ref_format_name(jn, name, sizeof name) != 0)
        return -1;
    int n = snprintf(buf, len, "%s/queues/%s/jobs", root, queue);
    for (int l = 1; l <= LAYOUT_DEPTH && n > 0 && (size_t)n < len; l++)
        n += snprintf(buf + n, len - (size_t)n, "/%llu",
                      (unsigned long long)layout_bucket_of(jn->due_ms, l));
    if (n < 0 || (size_t)n >= len || (jn->shard[0] && !layout_valid_shard(jn->shard)))
        return -1;
    size_t used = (size_t)n;
    n = snprintf(buf + used, len - used, "%s%s/%s", jn->shard[0] ? "/" : "", jn->shard, name);
    return n > 0 && (size_t)n < len - used ? 0 : -1;
}

static void random_text(char *out, size_t max, const char *alphabet)
{
    size_t n = 1 + (size_t)rand() % max, k = strlen(alphabet);
    for (size_t i = 0; i < n; i++)
        out[i] = alphabet[(size_t)rand() % k];
    out[n] = '\0';
}

static void random_name(struct job_name *jn)
{
    static const char *const lower = "0123456789abcdefghijklmnopqrstuvwxyz";
    memset(jn, 0, sizeof *jn);
    jn->due_ms = rand() % 8 ? (uint64_t)rand() * 1000003ULL % (LAYOUT_DUE_MAX + 2) : (uint64_t)rand();
    jn->priority = rand() % 3 ? (uint32_t)rand() : UINT32_MAX;
    random_text(jn->uid, rand() % 16 ? 16 : LAYOUT_UID_MAX, lower);
    jn->prior_attempts = rand() % 2 ? (uint32_t)rand() % 100000 : 0;
    jn->ttr_ms = rand() % 2 ? (uint32_t)rand() : 0;
    if (rand() % 3 == 0)
        random_text(jn->group, 12, rand() % 4 ? "abc-XY:@9" : "-_.bad!");
    if (rand() % 3 == 0)
        random_text(jn->flow, 16, lower);
    jn->has_results = rand() % 4 == 0;
    jn->flow_acked = (uint32_t)rand();
    jn->flow_dead = (uint32_t)rand() % 7;
    if (rand() % 3 == 0)
        random_text(jn->key, 40, rand() % 4 ? "ab-c:d@1_." : "/ x");
    if (rand() % 3 == 0)
        random_text(jn->shard, 6, "s0a-");
    if (rand() % 5 == 0)
        jn->uid[0] = rand() % 2 ? 'A' : '\0'; /* not a uid: refused by both */
}

static void formats_match_snprintf(void)
{
    srand(43);
    int compared = 0, refused = 0;
    for (int t = 0; t < 3000; t++) {
        struct job_name jn;
        random_name(&jn);
        char want[LAYOUT_PATH_MAX], got[LAYOUT_PATH_MAX];
        for (size_t len = 1; len <= sizeof want; len += len < 200 ? 1 : 97) {
            int rw = ref_format_name(&jn, want, len), rg = layout_format_name(&jn, got, len);
            CHECK(rw == rg);
            if (rw == 0 && rg == 0)
                CHECK(strcmp(want, got) == 0);
            rw = ref_job_path(want, len, "/deferd", "emails", &jn);
            rg = layout_job_path(got, len, "/deferd", "emails", &jn);
            CHECK(rw == rg);
            if (rw == 0 && rg == 0) {
                CHECK(strcmp(want, got) == 0);
                compared++;
            }
            refused += rw != 0;
        }
    }
    CHECK(compared > 1000 && refused > 1000); /* both sides of the edge were tried */
}

/* A znode's parent: the part before its last '/', refused when there is none or it does not
 * fit. */
static void parent_paths(void)
{
    char buf[16];
    CHECK(layout_parent_path(buf, sizeof buf, "/a/b/c") == 0);
    CHECK_STR(buf, "/a/b");
    CHECK(layout_parent_path(buf, sizeof buf, "/a") == -1); /* the root has no parent here */
    CHECK(layout_parent_path(buf, sizeof buf, "abc") == -1);
    CHECK(layout_parent_path(buf, sizeof buf, "/123456789012345/x") == -1); /* 16 bytes */
    CHECK(layout_parent_path(buf, sizeof buf, "/12345678901234/x") == 0);   /* 15 fit */
    CHECK_STR(buf, "/12345678901234");
}

int main(void)
{
    parent_paths();
    formats_match_snprintf();
    claim_names();
    slot_names();
    flow_names();
    result_names();
    groups();
    round_trips();
    queue_nodes();
    tokens();
    paths();
    short_form();
    shards();
    path_and_id();
    foreign_names();
    keys();
    key_nodes();
    kept_keys();
    packs();
    return check_report("layout");
}
