/* A request's parameters: its query (GET) or form (POST), and the refusals of values
 * people typed, which say what was wrong and what is wanted. */
#ifndef DEFERD_WEB_PARAMS_H
#define DEFERD_WEB_PARAMS_H

#include <stddef.h>

struct evhttp_request;
struct evkeyvalq;

/* The request's query (GET) or form body (POST) into Q; 0, or -1 when malformed. */
int web_params(struct evhttp_request *req, struct evkeyvalq *q);
/* A query parameter's refusal for people: "NAME=VALUE WHY" into ERR (VALUE cut when long);
 * WHY says what is wrong and what NAME takes ("is not a time: from= is ..."). */
void web_bad_param(char *err, size_t len, const char *name, const char *value,
                   const char *why);
/* ?limit=N of a page, 1..MAX (DEF when absent): 0, or -1 with ERR saying why (the value,
 * and the range). */
int web_limit(struct evkeyvalq *q, size_t def, size_t max, size_t *out, char *err,
              size_t len);

#endif
