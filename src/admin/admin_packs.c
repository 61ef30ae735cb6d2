/* deferctl and packed jobs (layout version 2, docs/zookeeper-layout.md "Packs"): finding a
 * packed job, in its pack or where unpacking put it, and the packs of a due-time range in
 * window order, for list. */
#include <stdlib.h>
#include <string.h>

#include "admin_int.h"

void admin_packed_clear(struct admin_packed *p)
{
    free(p->data);
    free(p->rest);
    memset(p, 0, sizeof *p);
}

/* Reads a whole pack (at most PACK_BYTES_MAX) into P. */
static int read_pack(struct admin *a, const char *path, struct admin_packed *p)
{
    struct Stat st;
    int len = PACK_BYTES_MAX + 1;
    if (!(p->data = malloc((size_t)len)))
        return ZSYSTEMERROR;
    int rc = zoo_get(a->zh, path, 0, (char *)p->data, &len, &st);
    if (rc == ZOK && st.dataLength > len)
        rc = ZMARSHALLINGERROR; /* larger than any pack: not cut silently */
    p->len = rc == ZOK && len > 0 ? (size_t)len : 0;
    p->version = st.version;
    return rc;
}

/* The pack is gone, so the job was unpacked: its bucket, or the pack's shard in it. */
static int unpacked_path(struct admin *a, const char *queue, struct job_name *jn, char *path,
                         size_t plen)
{
    struct pack_name pn;
    struct Stat st;
    int rc = layout_parse_pack_name(jn->pack, &pn);
    jn->pack[0] = '\0';
    layout_job_path(path, plen, a->cfg.zk_root, queue, jn);
    if (rc != 0 || (rc = zoo_exists(a->zh, path, 0, &st)) != ZNONODE)
        return rc == ZNONODE ? ZOK : rc;
    layout_pack_shard(jn->shard, sizeof jn->shard, pn.uid);
    layout_job_path(path, plen, a->cfg.zk_root, queue, jn);
    return ZOK;
}

static int packed_read(struct admin *a, const char *queue, struct job_name *jn, char *path,
                       size_t plen, struct admin_packed *p, char *err, size_t errlen)
{
    struct pack_reader rd;
    memset(p, 0, sizeof *p);
    if (layout_pack_path(p->path, sizeof p->path, a->cfg.zk_root, queue, jn->pack) != 0)
        return ZNONODE;
    int rc = read_pack(a, p->path, p);
    if (rc == ZNONODE)
        return unpacked_path(a, queue, jn, path, plen);
    if (rc != ZOK)
        return admin_failed(err, errlen, "reading", p->path, rc), ADMIN_PACK_FAILED;
    if ((rc = pack_open(&rd, p->data, p->len)) != 0)
        return snprintf(err, errlen, "pack %s cannot be read: %s", p->path, rd.err),
               ADMIN_PACK_FAILED;
    if (pack_find(&rd, jn->uid, &p->job) != 0)
        return ZNONODE;
    if (rd.count > 1 && (!(p->rest = malloc(p->len)) ||
                         pack_without(&rd, jn->uid, p->rest, p->len, &p->rest_len) != 0))
        return snprintf(err, errlen, "out of memory"), ADMIN_PACK_FAILED;
    memcpy(p->job.name.pack, jn->pack, sizeof p->job.name.pack);
    *jn = p->job.name; /* the record is the truth */
    p->in = 1;
    return ZOK;
}

int admin_packed_read(struct admin *a, const char *queue, struct job_name *jn, char *path,
                      size_t plen, struct admin_packed *p, char *err, size_t errlen)
{
    int rc = packed_read(a, queue, jn, path, plen, p, err, errlen);
    if (!p->in)
        admin_packed_clear(p); /* only a job in its pack keeps the pack */
    return rc;
}

/* ---- the packs of a range, for list ---- */

struct pack_ref { uint64_t start; char name[LAYOUT_PACK_MAX + 1]; char l1[24]; };

static int ref_cmp(const void *x, const void *y)
{
    const struct pack_ref *a = x, *b = y;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* The packs under DIR whose window meets [from, until]. */
static int refs_of(struct admin *a, const char *dir, const char *l1, uint64_t from,
                   uint64_t until, struct pack_ref **refs, size_t *n, size_t *cap)
{
    struct String_vector kids;
    int rc = zoo_get_children(a->zh, dir, 0, &kids);
    if (rc != ZOK)
        return rc == ZNONODE ? ZOK : rc;
    for (int i = 0; rc == ZOK && i < kids.count; i++) {
        struct pack_name pn;
        if (layout_parse_pack_name(kids.data[i], &pn) != 0 || pn.start_ms > until ||
            pn.start_ms + pn.width_ms <= from)
            continue; /* foreign names are the daemons' to report */
        if (*n == *cap) {
            struct pack_ref *r = realloc(*refs, (*cap = *cap ? *cap * 2 : 64) * sizeof *r);
            if (!r) {
                rc = ZSYSTEMERROR;
                break;
            }
            *refs = r;
        }
        (*refs)[*n].start = pn.start_ms;
        snprintf((*refs)[*n].name, sizeof (*refs)[*n].name, "%s", kids.data[i]);
        snprintf((*refs)[(*n)++].l1, sizeof (*refs)[0].l1, "%s", l1);
    }
    deallocate_String_vector(&kids);
    return rc;
}

/* The jobs of one pack to EACH; an unreadable or vanished pack is skipped. */
static int visit_pack(struct admin *a, const char *path, const struct admin_pack_visit *v)
{
    struct admin_packed p = {0};
    struct pack_reader rd;
    struct pack_job job;
    int rc = read_pack(a, path, &p);
    if (rc == ZOK && pack_open(&rd, p.data, p.len) == 0)
        while (rc == ZOK && pack_next(&rd, &job) == 1)
            rc = v->each(&job, strrchr(path, '/') + 1, v->ctx);
    admin_packed_clear(&p);
    return rc == ZNONODE ? ZOK : rc; /* unpacked since the listing: its jobs are znodes */
}

int admin_packs_visit(struct admin *a, const char *queue, uint64_t from, uint64_t until,
                      const struct admin_pack_visit *v)
{
    char dir[LAYOUT_PATH_MAX], sub[LAYOUT_PATH_MAX + 96];
    struct String_vector l1s;
    struct pack_ref *refs = NULL;
    size_t n = 0, cap = 0;
    if (layout_packs_path(dir, sizeof dir, a->cfg.zk_root, queue) != 0)
        return ZBADARGUMENTS;
    int rc = zoo_get_children(a->zh, dir, 0, &l1s);
    if (rc != ZOK)
        return rc == ZNONODE ? ZOK : rc;
    for (int i = 0; rc == ZOK && i < l1s.count; i++) {
        uint64_t l1;
        if (layout_parse_bucket(l1s.data[i], 1, 0, &l1) < 0 ||
            (l1 + 1) * layout_bucket_width[1] <= from || l1 * layout_bucket_width[1] > until)
            continue;
        snprintf(sub, sizeof sub, "%s/%s", dir, l1s.data[i]);
        rc = refs_of(a, sub, l1s.data[i], from, until, &refs, &n, &cap);
    }
    deallocate_String_vector(&l1s);
    if (n)
        qsort(refs, n, sizeof *refs, ref_cmp);
    for (size_t i = 0; rc == ZOK && i < n && !v->enough(refs[i].start, v->ctx); i++) {
        snprintf(sub, sizeof sub, "%s/%s/%s", dir, refs[i].l1, refs[i].name);
        rc = visit_pack(a, sub, v);
    }
    free(refs);
    return rc;
}
