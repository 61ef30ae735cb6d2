/* A job's part in a flow as JSON (docs/flows.md), the same for deferctl show --json and the
 * dashboard's /api/v1/job: one writer, so that the two never say it differently. */
#include "admin_flow_json.h"

#include "jsonw.h"

static void results_json(struct jsonw *w, const struct admin_job *j)
{
    if (!j->jn.has_results) {
        jsonw_str(w, "flow_results", NULL);
        return;
    }
    jsonw_obj_begin(w, "flow_results"); /* a released on=complete parent: how they ended */
    jsonw_uint(w, "acked", j->jn.flow_acked);
    jsonw_uint(w, "dead", j->jn.flow_dead);
    jsonw_obj_end(w);
}

/* "flow_parent", "flow_results" and, for a parent waiting: "flow": {"on", "pending",
 * "acked", "dead", "children": [{"id", "held"}]} */
void admin_flow_json(struct jsonw *w, const struct admin_job *j)
{
    jsonw_str(w, "flow_parent", j->flow_parent[0] ? j->flow_parent : NULL);
    results_json(w, j);
    if (!j->waiting)
        return;
    jsonw_obj_begin(w, "flow");
    jsonw_str(w, "on", j->flow.on_complete ? "complete" : "success");
    jsonw_uint(w, "pending", j->flow.pending);
    jsonw_uint(w, "acked", j->flow.acked);
    jsonw_uint(w, "dead", j->flow.dead);
    jsonw_arr_begin(w, "children");
    for (size_t i = 0; i < j->nchildren; i++) {
        jsonw_obj_begin(w, NULL);
        jsonw_str(w, "id", j->children[i].id);
        jsonw_bool(w, "held", j->children[i].held);
        jsonw_obj_end(w);
    }
    jsonw_arr_end(w);
    jsonw_obj_end(w);
}
