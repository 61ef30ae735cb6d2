/* The Curator queue format as the engine sees it: its operations table (foreign_format.h),
 * made of curator_queue.c (puts), curator_consume.c, curator_listing.c and
 * curator_settle.c. */
#ifndef DEFERD_CURATOR_FORMAT_H
#define DEFERD_CURATOR_FORMAT_H

#include "foreign_format.h"

extern const struct foreign_format curator_format;

#endif
