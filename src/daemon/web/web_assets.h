/* The dashboard's static files (src/daemon/web/assets), embedded at build time by
 * embed.cmake. */
#ifndef DEFERD_WEB_ASSETS_H
#define DEFERD_WEB_ASSETS_H

#include <stddef.h>

struct web_asset {
    const char *name;          /* the file's name: served at /ui/static/<name> */
    const unsigned char *data;
    size_t len;
};

/* Ends with a NULL name. */
extern const struct web_asset web_assets[];

#endif
