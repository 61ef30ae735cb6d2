/* The header of a metric family in Prometheus' text format, for every file that writes
 * families (metrics_expose.c, metrics_depth.c, metrics_process.c, metrics_limits.c). */
#include <event2/buffer.h>

#include "metrics_int.h"

void metrics_family(struct evbuffer *out, const char *name, const char *type, const char *help)
{
    evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}
