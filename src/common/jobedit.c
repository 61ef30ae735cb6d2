#include "jobedit.h"

#include <string.h>

void jobedit_next_name(struct job_name *next, const struct job_name *cur, uint64_t due_ms,
                       uint32_t attempts)
{
    *next = *cur;
    next->due_ms = due_ms;
    next->prior_attempts = attempts;
    next->shard[0] = '\0';
    next->pack[0] = '\0';
}

static int add(struct jobedit_multi *m, int kind, const char *path, const char *data,
               size_t len, int version)
{
    m->ops[m->n] = (struct jobedit_op){.kind = kind, .path = path, .data = data, .len = len,
                                       .version = version};
    return m->n++;
}

/* The key node goes with a cancelled job; a moved job's names its new name. */
static int add_key(const struct jobedit *e, struct jobedit_multi *m)
{
    if (!e->next)
        return add(m, JOBEDIT_DELETE, e->key_path, NULL, 0, e->key_version);
    if (layout_key_data(m->key_data, sizeof m->key_data, e->next) != 0)
        return -1;
    return add(m, JOBEDIT_SET, e->key_path, m->key_data, strlen(m->key_data),
               e->key_version);
}

int jobedit_multi(const struct jobedit *e, struct jobedit_multi *m)
{
    m->n = 0;
    m->create = m->key = m->counter = -1;
    for (int i = 0; i < e->nholders && i < JOBEDIT_HOLDERS_MAX; i++)
        add(m, JOBEDIT_DELETE, e->holders[i], NULL, 0, -1);
    /* deleted whatever its version, but never while held: ZooKeeper refuses a delete of a
     * node with children (the holders above go first when forced) */
    if (e->pack_path && e->pack_data)
        m->job = add(m, JOBEDIT_SET, e->pack_path, (const char *)e->pack_data, e->pack_len,
                     e->pack_version);
    else if (e->pack_path)
        m->job = add(m, JOBEDIT_DELETE, e->pack_path, NULL, 0, e->pack_version);
    else
        m->job = add(m, JOBEDIT_DELETE, e->job_path, NULL, 0, -1);
    if (e->next)
        m->create = add(m, JOBEDIT_CREATE, e->next_path, e->payload, e->len, -1);
    if (e->key_path && (m->key = add_key(e, m)) < 0)
        return -1;
    if (e->counter_path)
        m->counter = add(m, JOBEDIT_SET, e->counter_path, e->counter_value,
                         strlen(e->counter_value), e->counter_version);
    return 0;
}
