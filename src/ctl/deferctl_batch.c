/* deferctl put --batch FILE: one job a line, all put with BATCH (docs/deferctl.md). The
 * whole file is parsed before anything is sent, so a typo on line 900 stores nothing. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "deferctl.h"
#include "jsonw.h"
#include "layout.h"
#include "names.h"
#include "units.h"

/* deferd's limit on the payload of one BATCH (docs/protocol.md). */
#define BATCH_BYTES_MAX (16u * 1024 * 1024)

struct batch {
    deferd_put_item *items;
    void **decoded;             /* payload64 buffers, one per item (or NULL) */
    size_t n, cap;
};

static int b64_value(unsigned char ch)
{
    if (ch >= 'A' && ch <= 'Z')
        return ch - 'A';
    if (ch >= 'a' && ch <= 'z')
        return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9')
        return ch - '0' + 52;
    return ch == '+' ? 62 : ch == '/' ? 63 : -1;
}

/* RFC 4648 base64; the '=' padding may be left out. */
static int b64_decode(const char *s, size_t n, unsigned char **out, size_t *len)
{
    size_t pad = 0;
    while (n > 0 && s[n - 1] == '=' && pad < 2) {
        n--;
        pad++;
    }
    if (n % 4 == 1 || (pad && (n + pad) % 4 != 0))
        return -1;
    unsigned char *buf = malloc(n * 3 / 4 + 1);
    uint32_t acc = 0;
    int bits = 0;
    *len = 0;
    for (size_t i = 0; buf && i < n; i++) {
        int v = b64_value((unsigned char)s[i]);
        if (v < 0) {
            free(buf);
            return -1;
        }
        acc = acc << 6 | (uint32_t)v;
        if ((bits += 6) >= 8) {
            bits -= 8;
            buf[(*len)++] = (unsigned char)(acc >> bits);
        }
    }
    *out = buf;
    return buf ? 0 : -1;
}

static int line_error(const char *file, size_t lineno, const char *what, const char *text)
{
    fprintf(stderr, "deferctl: %s:%zu: %s%s%.80s%s\n", strcmp(file, "-") ? file : "<stdin>",
            lineno, what, text ? " '" : "", text ? text : "", text ? "'" : "");
    return EXIT_USAGE;
}

/* One "name=value" option of a line into the item; the error text, or NULL. */
static const char *take_option(char *tok, deferd_put_item *it, int64_t now)
{
    char *eq = strchr(tok, '=');
    if (!eq)
        return "expected name=value, not";
    *eq = '\0';
    const char *v = eq + 1;
    deferd_put_opts *o = &it->opts;
    uint64_t n;
    if (strcmp(tok, "queue") == 0 && !it->queue && names_valid_queue(v))
        it->queue = v;
    else if (strcmp(tok, "delay") == 0 && !o->has_delay && !o->has_at &&
             units_parse_duration_ms(v, &o->delay_ms) == 0)
        o->has_delay = 1;
    else if (strcmp(tok, "at") == 0 && !o->has_at && !o->has_delay &&
             units_parse_time_ms(v, now, &o->at_ms) == 0)
        o->has_at = 1;
    else if (strcmp(tok, "prio") == 0 && !o->has_priority &&
             units_parse_u64(v, UINT32_MAX, &n) == 0)
        o->has_priority = 1;
    else if (strcmp(tok, "ttr") == 0 && !o->has_ttr && units_parse_duration_ms(v, &n) == 0 &&
             n >= DEFERD_TTR_MIN_MS && n <= DEFERD_TTR_MAX_MS)
        o->has_ttr = 1;
    else if (strcmp(tok, "key") == 0 && !o->key && names_valid_key(v))
        o->key = v;
    else if (strcmp(tok, "group") == 0 && !o->group && names_valid_group(v))
        o->group = v;
    else {
        const char *problem =
            strcmp(tok, "at") ? NULL : units_time_problem(units_parse_time_ms(v, now, &n));
        *eq = '='; /* the message shows the whole token */
        return problem ? problem : "invalid, repeated or unknown option (or delay with at)";
    }
    if (strcmp(tok, "prio") == 0)
        o->priority = (uint32_t)n;
    else if (strcmp(tok, "ttr") == 0)
        o->ttr_ms = n;
    return NULL;
}

/* "queue=Q ... payload=REST" or "... payload64=B64" into the item; the tokens stay in the
 * line, which must outlive the item. */
static const char *parse_line(char *line, deferd_put_item *it, void **decoded, int64_t now,
                              char **bad)
{
    memset(it, 0, sizeof *it);
    *decoded = NULL;
    for (char *p = line; *p;) {
        if (*p == ' ') {
            p++;
            continue;
        }
        *bad = p;
        if (strncmp(p, "payload=", 8) == 0) {
            it->payload = p + 8;
            it->len = strlen(p + 8);
            break;
        }
        char *end = p + strcspn(p, " ");
        int last = *end == '\0';
        *end = '\0';
        if (strncmp(p, "payload64=", 10) == 0) {
            if (!last)
                return "payload64= must come last";
            if (b64_decode(p + 10, strlen(p + 10), (unsigned char **)decoded, &it->len) != 0)
                return "invalid base64 in";
            it->payload = *decoded;
            break;
        }
        const char *why = take_option(p, it, now);
        if (why)
            return why;
        p = last ? end : end + 1;
    }
    *bad = NULL;
    if (!it->queue)
        return "no queue=";
    return it->payload ? NULL : "no payload= or payload64=";
}

static int batch_add(struct batch *b, deferd_put_item **it, void ***decoded)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        deferd_put_item *items = realloc(b->items, cap * sizeof *items);
        if (items)
            b->items = items;
        void **dec = items ? realloc(b->decoded, cap * sizeof *dec) : NULL;
        if (!dec)
            return -1;
        b->decoded = dec;
        b->cap = cap;
    }
    *it = &b->items[b->n];
    *decoded = &b->decoded[b->n];
    b->n++;
    return 0;
}

static void batch_free(struct batch *b)
{
    for (size_t i = 0; i < b->n; i++)
        free(b->decoded[i]);
    free(b->decoded);
    free(b->items);
}

/* Every line of DATA (NUL-terminated in place) into B; an exit status. */
static int parse_file(const char *file, char *data, size_t len, struct batch *b)
{
    int64_t now = units_wall_ms();
    size_t lineno = 0;
    for (char *line = data; line < data + len;) {
        char *nl = memchr(line, '\n', (size_t)(data + len - line));
        char *next = nl ? nl + 1 : data + len;
        lineno++;
        if (nl)
            *nl = '\0';
        if (memchr(line, '\0', (size_t)(next - line) - (nl != NULL)) != NULL)
            return line_error(file, lineno, "NUL byte in the line (use payload64=)", NULL);
        if (line[0] != '\0' && line[0] != '#') {
            deferd_put_item *it;
            void **dec;
            char *bad = NULL;
            if (batch_add(b, &it, &dec) != 0)
                return line_error(file, lineno, "out of memory", NULL);
            const char *why = parse_line(line, it, dec, now, &bad);
            if (why)
                return line_error(file, lineno, why, bad);
        }
        line = next;
    }
    if (b->n == 0)
        return line_error(file, lineno, "no jobs in the file", NULL);
    return EXIT_OK;
}

/* How many items from FIRST go into one BATCH: at most DEFERD_BATCH_MAX jobs and
 * BATCH_BYTES_MAX of payload (at least one job). */
static size_t chunk_len(const struct batch *b, size_t first)
{
    size_t n = 0, bytes = 0;
    while (first + n < b->n && n < DEFERD_BATCH_MAX &&
           (n == 0 || bytes + b->items[first + n].len <= BATCH_BYTES_MAX))
        bytes += b->items[first + n++].len;
    return n;
}

static void print_items(struct jsonw *w, const deferd_put_item *items, size_t n, int json)
{
    for (size_t i = 0; i < n; i++) {
        if (!json) {
            printf("%s%s\n", items[i].id, items[i].duplicate ? " duplicate" : "");
            continue;
        }
        jsonw_obj_begin(w, NULL);
        jsonw_str(w, "id", items[i].id);
        jsonw_bool(w, "duplicate", items[i].duplicate);
        jsonw_obj_end(w);
    }
}

/* Sends the batch in chunks, each all or none; prints the ids of what was stored. */
static int send_batch(deferd_client *c, struct batch *b, struct jsonw *w, int json)
{
    for (size_t first = 0; first < b->n;) {
        size_t n = chunk_len(b, first), stored = 0;
        int err;
        for (int tries = 0;; tries++) {
            err = deferd_put_batch(c, b->items + first, n, NULL, &stored);
            if (!ctl_zk_starting(c, err, tries))
                break;
            poll(NULL, 0, 100);
        }
        print_items(w, b->items + first, stored, json);
        if (err != DEFERD_OK) {
            if (first + stored > 0)
                fprintf(stderr, "deferctl: %zu of the %zu jobs were stored (their ids are "
                        "printed), the rest not\n", first + stored, b->n);
            return ctl_lib_fail(c, "put --batch", err);
        }
        first += n;
    }
    return EXIT_OK;
}

/* FILE read (DATA, freed by the caller) and parsed into B: EXIT_OK, or the exit status
 * after saying why. */
static int load_jobs(const char *file, char **data, struct batch *b)
{
    size_t len = 0;
    if (ctl_read_path(file, data, &len) != 0) {
        fprintf(stderr, "deferctl: cannot read %s: %s\n",
                strcmp(file, "-") ? file : "standard input", strerror(errno));
        return EXIT_FAIL;
    }
    return parse_file(file, *data, len, b);
}

/* What a put of a file's jobs sends, in the JSON object (JSON) or as lines. */
struct file_put {
    int (*send)(deferd_client *c, struct batch *b, const struct file_put *fp, struct jsonw *w);
    const char *on; /* FLOW's on= */
    int json;
};

/* Connects, sends B by FP and frees what was loaded: the exit status. */
static int put_loaded(const char *sock, struct batch *b, char *data, int rc,
                      const struct file_put *fp)
{
    deferd_client *c = rc == EXIT_OK ? ctl_connect(sock) : NULL;
    if (rc == EXIT_OK && c) {
        struct jsonw w;
        jsonw_init(&w, stdout);
        if (fp->json)
            jsonw_obj_begin(&w, NULL);
        rc = fp->send(c, b, fp, &w);
        if (fp->json) {
            jsonw_obj_end(&w);
            jsonw_finish(&w);
        }
    } else if (rc == EXIT_OK) {
        rc = EXIT_FAIL;
    }
    deferd_close(c);
    batch_free(b);
    free(data);
    return rc;
}

static int send_batch_json(deferd_client *c, struct batch *b, const struct file_put *fp,
                           struct jsonw *w)
{
    if (fp->json)
        jsonw_arr_begin(w, "jobs");
    int rc = send_batch(c, b, w, fp->json);
    if (fp->json) {
        jsonw_arr_end(w);
        jsonw_bool(w, "complete", rc == EXIT_OK);
    }
    return rc;
}

int ctl_put_batch(const char *sock, const char *file, int json)
{
    char *data = NULL;
    struct batch b = {0};
    int rc = load_jobs(file, &data, &b);
    return put_loaded(sock, &b, data, rc, &(struct file_put){send_batch_json, NULL, json});
}

/* The flow's jobs sent as one FLOW; prints the parent's id, then the children's. */
static int send_flow(deferd_client *c, struct batch *b, const struct file_put *fp,
                     struct jsonw *w)
{
    int err;
    for (int tries = 0;; tries++) {
        err = deferd_put_flow(c, b->items, b->n, fp->on);
        if (!ctl_zk_starting(c, err, tries))
            break;
        poll(NULL, 0, 100);
    }
    int rc = err == DEFERD_OK ? EXIT_OK : ctl_lib_fail(c, "put --flow", err);
    if (!fp->json) {
        if (rc == EXIT_OK)
            print_items(w, b->items, b->n, 0);
        return rc;
    }
    if (rc == EXIT_OK) {
        jsonw_str(w, "parent", b->items[0].id);
        jsonw_arr_begin(w, "children");
        for (size_t i = 1; i < b->n; i++)
            jsonw_str(w, NULL, b->items[i].id);
        jsonw_arr_end(w);
    }
    jsonw_bool(w, "stored", rc == EXIT_OK);
    return rc;
}

int ctl_put_flow(const char *sock, const char *file, const char *on, int json)
{
    char *data = NULL;
    struct batch b = {0};
    int rc = load_jobs(file, &data, &b);
    if (rc == EXIT_OK && (b.n < 2 || b.n > DEFERD_BATCH_MAX)) {
        fprintf(stderr, "deferctl: %s: a flow is a parent and 1 to %d children, not %zu jobs\n",
                file, DEFERD_BATCH_MAX - 1, b.n);
        rc = EXIT_USAGE;
    }
    return put_loaded(sock, &b, data, rc, &(struct file_put){send_flow, on, json});
}
