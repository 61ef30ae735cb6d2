#include "curator_format.h"

#include "curator_consume.h"
#include "curator_queue.h"

const struct foreign_format curator_format = {
    .put = curator_queue_put,
    .follow = curator_consume_start,
    .dispatch = curator_dispatch,
    .release = curator_part_release,
    .settle = curator_part_settle,
    .job_freed = curator_job_freed,
    .priority = curator_job_priority,
    .reset = curator_consume_reset,
    .resync = curator_consume_resync,
    .free = curator_consume_free,
    .format_stats = curator_consume_format,
};
