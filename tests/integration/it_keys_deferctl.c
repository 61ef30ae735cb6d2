/* Keys from the command line (docs/deferctl.md): deferctl put --key, put --batch and
 * cancel --key, against three daemons on one root. */
#include <stdlib.h>

#include "harness_keys.h"
#include "layout.h"

static struct daemon_proc d[3];
static char root[128];
static zhandle_t *zh;

/* ---- deferctl ---- */

static int job_payload_is(const char *id, const char *want)
{
    char path[LAYOUT_PATH_MAX], data[256];
    if (job_path(root, id, path, sizeof path) != 0 || zk_get(zh, path, data, sizeof data) < 0)
        return 0;
    if (strcmp(data, want) == 0)
        return 1;
    fprintf(stderr, "%s holds '%s', want '%s'\n", id, data, want);
    return 0;
}

/* put --key (a duplicate from another daemon), put --batch FILE (all or none, ids in file
 * order, a taken key printed as a duplicate), cancel --key; deferctl reads the daemon's
 * base config, so queues emails and b, which the other parts do not use. */
static void deferctl_keys(void)
{
    char out[8192], id1[DEFERD_ID_SIZE] = "", id2[DEFERD_ID_SIZE] = "",
                    id3[DEFERD_ID_SIZE] = "", dup[DEFERD_ID_SIZE] = "", word[32] = "";
    CHECK(run_deferctl(&d[0], "put -q emails --delay 1h --key ctl-1 'first one'", out,
                       sizeof out) == 0);
    CHECK(sscanf(out, "%255s", id1) == 1 && id_has_key(id1, "ctl-1"));
    CHECK(key_names("emails", "ctl-1", id1) && job_payload_is(id1, "first one"));
    CHECK(run_deferctl(&d[1], "put -q emails --key ctl-1 --json second 2>/dev/null", out,
                       sizeof out) == 0);
    CHECK_CONTAINS(out, id1);
    CHECK_CONTAINS(out, "\"duplicate\":true");
    CHECK(job_payload_is(id1, "first one"));

    char file[400], args[512];
    snprintf(file, sizeof file, "%s/batch.txt", d[0].dir);
    FILE *f = fopen(file, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fprintf(f, "queue=emails key=ctl-2 delay=1h payload=two words\n"
               "# a comment, then a blank line\n\n"
               "queue=b key=ctl-3 delay=1h prio=3 payload64=aGVsbG8Kd29ybGQ=\n"
               "queue=emails key=ctl-1 delay=1h payload=taken\n");
    fclose(f);
    snprintf(args, sizeof args, "put --batch %s", file);
    CHECK(run_deferctl(&d[2], args, out, sizeof out) == 0);
    printf("deferctl put --batch:\n%s", out);
    CHECK(sscanf(out, "%255s %255s %255s %31s", id2, id3, dup, word) == 4);
    CHECK(id_has_key(id2, "ctl-2") && key_names("emails", "ctl-2", id2));
    CHECK(id_has_key(id3, "ctl-3") && key_names("b", "ctl-3", id3));
    CHECK_STR(dup, id1);
    CHECK_STR(word, "duplicate");
    CHECK(job_payload_is(id2, "two words") && job_payload_is(id3, "hello\nworld"));
    CHECK(zk_count_jobs(zh, root, "emails") == 2 && zk_count_jobs(zh, root, "b") == 1);

    /* a batch file with an unknown queue: nothing stored, the taken key not even read */
    f = fopen(file, "w");
    CHECK(f != NULL);
    if (f) {
        fprintf(f, "queue=emails key=ctl-4 payload=x\nqueue=nosuchqueue payload=y\n");
        fclose(f);
    }
    snprintf(args, sizeof args, "put --batch %s 2>/dev/null", file);
    CHECK(run_deferctl(&d[0], args, out, sizeof out) != 0);
    CHECK(key_absent("emails", "ctl-4") && zk_count_jobs(zh, root, "emails") == 2);

    CHECK(run_deferctl(&d[1], "cancel --key ctl-2 emails", out, sizeof out) == 0);
    CHECK(strncmp(out, "cancelled ", 10) == 0 && strstr(out, id2));
    CHECK(!zk_job_exists(zh, root, id2) && key_absent("emails", "ctl-2"));
    CHECK(run_deferctl(&d[1], "cancel --key ctl-2 emails 2>/dev/null", out, sizeof out) == 3);
    CHECK(run_deferctl(&d[0], "cancel --key ctl-1 emails", out, sizeof out) == 0);
    CHECK(run_deferctl(&d[0], "cancel --key ctl-3 b", out, sizeof out) == 0);
    CHECK(zk_count_jobs(zh, root, "emails") == 0 && zk_count_jobs(zh, root, "b") == 0);
    CHECK(key_absent("emails", "ctl-1") && key_absent("b", "ctl-3"));
}

int main(void)
{
    return keys_run("keys_deferctl", d, root, sizeof root, &zh, deferctl_keys);
}
