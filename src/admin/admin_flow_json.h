/* A job's part in a flow as JSON: deferctl show --json and the dashboard's job API. */
#ifndef DEFERD_ADMIN_FLOW_JSON_H
#define DEFERD_ADMIN_FLOW_JSON_H

#include "admin.h"

struct jsonw;

/* Writes the flow fields of J (admin_show) into the object W has open. */
void admin_flow_json(struct jsonw *w, const struct admin_job *j);

#endif
