/* The dashboard's pages, each GET with its JSON twin under /api/v1 (JSON set), as the
 * router (web.c) calls them: each answers REQ itself, now or once the reader thread read
 * what it shows. */
#ifndef DEFERD_WEB_PAGES_H
#define DEFERD_WEB_PAGES_H

struct evhttp_request;
struct web;

/* The lists' pages (jobs, dead letters): rows by default and at most, and the bytes of each
 * payload shown. */
#define WEB_PAGE_DEFAULT 50
#define WEB_PAGE_MAX 500
#define WEB_PREVIEW_BYTES 120

/* GET /ui/, /api/v1/overview (web_overview.c): every queue's depth (all daemons') and this
 * daemon's view of it. */
void web_overview_page(struct web *w, struct evhttp_request *req, int json);
/* GET /ui/queues/Q[/dead], /api/v1/queues/Q/jobs|dead (web_queue.c, web_dead.c). */
void web_queue_page(struct web *w, struct evhttp_request *req, const char *queue, int json);
void web_dead_page(struct web *w, struct evhttp_request *req, const char *queue, int json);
/* GET /ui/schedules, /api/v1/schedules (web_schedules.c). */
void web_schedules_page(struct web *w, struct evhttp_request *req, int json);
/* GET /ui/job?id=, /api/v1/job?id= (web_job.c). */
void web_job_page(struct web *w, struct evhttp_request *req, int json);
/* GET /ui/static/NAME (web_static.c): a file built into the binary. */
void web_static_page(struct evhttp_request *req, const char *name);

#endif
