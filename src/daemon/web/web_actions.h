/* The dashboard's actions (web_actions.c): POSTs that change jobs and queues. */
#ifndef DEFERD_WEB_ACTIONS_H
#define DEFERD_WEB_ACTIONS_H

struct evhttp_request;
struct web;

/* 1 when PATH named an action (answered), else 0. */
int web_action(struct web *w, struct evhttp_request *req, const char *path);

#endif
