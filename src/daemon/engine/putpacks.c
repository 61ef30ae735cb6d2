#include "putpacks.h"

#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "daemon.h"
#include "put_env.h"
#include "pack.h"
#include "packer.h"
#include "putjob.h"
#include "queue.h"
#include "zkstore.h"

static int name_pack(const struct put_env *env, struct putpack *p)
{
    if (packer_name_pack(env->d->packer, p->q, p->start, p->width, p->name, sizeof p->name,
                         p->path, sizeof p->path) != 0)
        return ZK_ETOOLONG;
    return packer_prepare_dir(env->d->packer, p->path);
}

/* A pack of the set for Q's window START with room for SIZE more bytes, or a new one. */
static int pack_for(struct putpacks *pp, const struct put_env *env, struct dqueue *q,
                    uint64_t start, size_t size, size_t *index)
{
    for (size_t i = 0; i < pp->n; i++) {
        struct putpack *p = &pp->v[i];
        if (p->q == q && p->start == start && p->name[0] && p->jobs < PACK_JOBS_MAX &&
            p->bytes + size <= PACK_BYTES_MAX - PACK_EMPTY_SIZE) {
            *index = i;
            return ZOK;
        }
    }
    if (pp->n == pp->cap) {
        size_t cap = pp->cap ? 2 * pp->cap : 4;
        struct putpack *v = realloc(pp->v, cap * sizeof *v);
        if (!v)
            return ZK_ENOMEM;
        pp->v = v;
        pp->cap = cap;
    }
    struct putpack *p = &pp->v[pp->n];
    *p = (struct putpack){.q = q, .start = start, .width = q->cfg->pack_window_ms};
    int rc = name_pack(env, p);
    if (rc == ZOK)
        *index = pp->n++;
    return rc;
}

int putpacks_join(struct putpacks *pp, const struct put_env *env, struct putjob *pj)
{
    struct dqueue *q = pj->q;
    /* a pack's format (pack.c) has no field for a group or a flow: such jobs stay znodes */
    if (pj->jn.group[0] || pj->jn.flow[0] || !packer_wants(env->d->packer, q, pj->jn.due_ms, pj->len))
        return 1;
    uint64_t start = packer_window_start(q, pj->jn.due_ms);
    size_t size = pack_job_size(&pj->jn, start, pj->len), i;
    int rc = pack_for(pp, env, q, start, size, &i);
    if (rc != ZOK)
        return rc;
    struct putpack *p = &pp->v[i];
    p->bytes += size;
    p->jobs++;
    pj->pack = (int)i;
    pj->jn.shard[0] = '\0';
    pj->jn.short_buckets = 0; /* a pack's record has no field for it: unpacked in full form */
    memcpy(pj->jn.pack, p->name, sizeof pj->jn.pack);
    memcpy(pj->path, p->path, sizeof pj->path);
    return ZOK;
}

static int to_create(const struct putjob *pj, size_t i)
{
    return pj->pack == (int)i && pj->named && !pj->dup && pj->dup_of < 0;
}

int putpacks_encode(struct putpacks *pp, size_t i, const struct putjob *jobs, size_t n,
                    unsigned *count)
{
    struct putpack *p = &pp->v[i];
    struct pack_writer w;
    size_t cap = p->bytes + PACK_EMPTY_SIZE;
    free(p->data);
    p->data = malloc(cap);
    p->len = p->encoded = 0;
    if (!p->data || pack_writer_init(&w, p->data, cap, p->start, p->width) != PACK_OK)
        return ZK_ENOMEM;
    for (size_t j = 0; j < n; j++) {
        if (!to_create(&jobs[j], i))
            continue;
        struct job_name jn = jobs[j].jn;
        jn.pack[0] = '\0'; /* a record names no pack: its pack is where it is */
        if (pack_add(&w, &jn, jobs[j].payload, jobs[j].len) != PACK_OK)
            return ZK_EINVAL; /* sized and checked when it joined */
        p->encoded++;
    }
    *count = p->encoded;
    return pack_finish(&w, &p->len) == PACK_OK ? ZOK : ZK_EINVAL;
}

void putpacks_rename(struct putpacks *pp, size_t i, struct putjob *jobs, size_t n)
{
    struct putpack *p = &pp->v[i];
    p->name[0] = '\0'; /* never chosen again */
    p->jobs = 0;
    for (size_t j = 0; j < n; j++)
        if (jobs[j].pack == (int)i) {
            jobs[j].pack = -1;
            jobs[j].named = 0;
            jobs[j].jn.pack[0] = '\0';
        }
}

void putpacks_count(const struct putpacks *pp, const struct put_env *env)
{
    for (size_t i = 0; i < pp->n; i++)
        if (pp->v[i].name[0] && pp->v[i].encoded)
            packer_count_written(env->d->packer, pp->v[i].encoded, pp->v[i].len);
}

void putpacks_free(struct putpacks *pp)
{
    for (size_t i = 0; i < pp->n; i++)
        free(pp->v[i].data);
    free(pp->v);
    *pp = (struct putpacks){0};
}
