#include "curator_format.h"

#include "curator_consume.h"
#include "curator_listing.h"
#include "curator_queue.h"
#include "curator_settle.h"

const struct foreign_format curator_format = {
    .put = curator_queue_put,
    .follow = curator_listing_start,
    .dispatch = curator_consume_dispatch,
    .release = curator_settle_release,
    .settle = curator_settle_part,
    .job_freed = curator_settle_job_freed,
    .priority = curator_consume_priority,
    .reset = curator_consume_reset,
    .resync = curator_consume_resync,
    .free = curator_consume_free,
    .format_stats = curator_consume_format,
};
