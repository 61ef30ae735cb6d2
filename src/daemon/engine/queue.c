#include "queue.h"

#include "config.h"
#include "daemon.h"
#include "log.h"
#include "metrics.h"
#include "zkacl.h"

void queue_denied(struct dqueue *q, const char *path)
{
    char who[128];
    metrics_denied(q->d->metrics, q->cfg);
    if (q->denied)
        return;
    q->denied = 1;
    zkacl_identity(q->d->cfg, who, sizeof who);
    log_error("queue %s: %s: ZooKeeper denies deferd access as %s (check [zookeeper] auth "
              "and the ACL of the znode or, for a create or delete, of its parent); further "
              "denials for this queue are only counted (deferd_zookeeper_denied_total)",
              q->cfg->name, path, who);
}

int queue_pending_limited(const struct dqueue *q) { return q->cfg->max_pending > 0; }

void queue_pending_changed(struct dqueue *q, int delta)
{
    if (!queue_pending_limited(q))
        return;
    q->count_unwritten += delta;
    q->count_since_sum += delta;
    q->count_since_inflight += delta;
}

int64_t queue_pending_estimate(const struct dqueue *q)
{
    return q->count_sum + q->count_since_sum;
}

int queue_pending_full(const struct dqueue *q)
{
    return queue_pending_limited(q) && q->count_ready && queue_pending_estimate(q) >= (int64_t)q->cfg->max_pending;
}
