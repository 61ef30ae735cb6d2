/* [web]: the dashboard (docs/web.md) and who may act on it. Its tokens are read with the
 * file, like auth_file, so that a bad or readable token file stops deferd at start (or a
 * reload) with the line to fix, not at the first click. */
#include <stdlib.h>
#include <string.h>

#include "config_int.h"
#include "errtext.h"

#define TOKEN_FILE_MAX 16384

/* Only deferd's loop thread reads the tokens: deferctl loads the same file as another
 * user, who may not (and need not) read them, and the dashboard's reader thread needs none. */
static _Thread_local int read_token_file;

void config_read_web_tokens(int on) { read_token_file = on; }

static int on_off(struct load *ld, int *dst, const char *key, const char *value)
{
    if (strcmp(value, "on") == 0 || strcmp(value, "yes") == 0)
        *dst = 1;
    else if (strcmp(value, "off") == 0 || strcmp(value, "no") == 0)
        *dst = 0;
    else
        return cfg_fail(ld, "'%s': '%s' is not on or off", key, value);
    return 1;
}

int cfg_web_key(struct load *ld, const char *key, const char *value)
{
    struct config *c = ld->cfg;
    if (strcmp(key, "dashboard") == 0)
        return on_off(ld, &c->web_dashboard, key, value);
    if (strcmp(key, "actions") == 0)
        return on_off(ld, &c->web_actions, key, value);
    if (strcmp(key, "read_token") == 0)
        return on_off(ld, &c->web_read_token, key, value);
    if (strcmp(key, "allowed_hosts") == 0) {
        free(c->web_allowed_hosts);
        c->web_allowed_hosts = value[0] ? strdup(value) : NULL;
        return value[0] && !c->web_allowed_hosts ? cfg_fail(ld, "out of memory") : 1;
    }
    if (strcmp(key, "token_file") != 0)
        return cfg_unknown_key(ld, SEC_WEB, "web", key);
    free(c->web_token_file);
    c->web_token_file = value[0] ? strdup(value) : NULL;
    ld->web_line = ld->line;
    return value[0] && !c->web_token_file ? cfg_fail(ld, "out of memory") : 1;
}

static int name_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '.' || ch == '_' || ch == '-';
}

/* Tokens travel in a header and a cookie: printable, no separators of either. */
static int secret_char(char ch)
{
    return name_char(ch) || ch == '~' || ch == '+' || ch == '/' || ch == '=';
}

/* "NAME:SECRET": 0, or the reason it is not one. */
static const char *parse_token(char *line, struct web_token *t)
{
    char *colon = strchr(line, ':');
    if (!colon)
        return "is not NAME:TOKEN";
    *colon = '\0';
    size_t nlen = strlen(line), slen = strlen(colon + 1);
    if (nlen == 0 || nlen > WEB_TOKEN_NAME_MAX)
        return "has a name that is empty or longer than " ERRTEXT_NUM(WEB_TOKEN_NAME_MAX)
               " characters";
    for (const char *p = line; *p; p++)
        if (!name_char(*p))
            return "has a name with other characters than letters, digits, '.', '_', '-'";
    if (slen < WEB_TOKEN_MIN || slen > WEB_TOKEN_MAX)
        return "has a token shorter than " ERRTEXT_NUM(WEB_TOKEN_MIN) " or longer than "
               ERRTEXT_NUM(WEB_TOKEN_MAX) " characters";
    for (const char *p = colon + 1; *p; p++)
        if (!secret_char(*p))
            return "has a token with other characters than letters, digits and . _ - ~ + / =";
    memcpy(t->name, line, nlen + 1);
    memcpy(t->secret, colon + 1, slen + 1);
    return NULL;
}

static int add_token(struct load *ld, char *line, int lineno)
{
    struct config *c = ld->cfg;
    struct web_token t;
    const char *why = parse_token(line, &t);
    if (why)
        return cfg_fail_at(ld, ld->web_line, "token_file %s: line %d %s", c->web_token_file,
                           lineno, why);
    for (size_t i = 0; i < c->web_ntokens; i++)
        if (strcmp(c->web_tokens[i].name, t.name) == 0 ||
            strcmp(c->web_tokens[i].secret, t.secret) == 0)
            return cfg_fail_at(ld, ld->web_line, "token_file %s: line %d repeats a name or a "
                               "token of an earlier line", c->web_token_file, lineno);
    struct web_token *more = realloc(c->web_tokens, (c->web_ntokens + 1) * sizeof *more);
    if (!more)
        return cfg_fail_at(ld, 0, "out of memory");
    c->web_tokens = more;
    c->web_tokens[c->web_ntokens++] = t;
    memset(&t, 0, sizeof t);
    return 0;
}

static int read_tokens(struct load *ld)
{
    struct config *c = ld->cfg;
    char *buf = malloc(TOKEN_FILE_MAX);
    if (!buf)
        return cfg_fail_at(ld, 0, "out of memory");
    int rc = cfg_read_secret_file(ld, ld->web_line, "token_file", c->web_token_file, buf,
                                  TOKEN_FILE_MAX, 1);
    char *save = NULL;
    int lineno = 0;
    for (char *line = rc == 0 ? buf : NULL; line && rc == 0; line = save) {
        save = strchr(line, '\n');
        if (save)
            *save++ = '\0';
        lineno++;
        line[strcspn(line, "\r")] = '\0';
        if (line[0] && line[0] != '#')
            rc = add_token(ld, line, lineno);
    }
    memset(buf, 0, TOKEN_FILE_MAX);
    free(buf);
    if (rc == 0 && c->web_ntokens == 0)
        return cfg_fail_at(ld, ld->web_line, "token_file %s holds no token (lines "
                           "NAME:TOKEN)", c->web_token_file);
    return rc;
}

int cfg_validate_web(struct load *ld)
{
    struct config *c = ld->cfg;
    if (c->web_token_file)
        return read_token_file ? read_tokens(ld) : 0;
    if (c->web_actions || c->web_read_token)
        return cfg_fail_at(ld, 0, "[web]: %s needs token_file (a file of NAME:TOKEN lines, "
                           "mode 0600)", c->web_actions ? "actions = on" : "read_token = on");
    return 0;
}

void cfg_free_web(struct config *cfg)
{
    free(cfg->web_allowed_hosts);
    free(cfg->web_token_file);
    if (cfg->web_tokens)
        memset(cfg->web_tokens, 0, cfg->web_ntokens * sizeof *cfg->web_tokens);
    free(cfg->web_tokens);
    cfg->web_tokens = NULL;
    cfg->web_ntokens = 0;
}
