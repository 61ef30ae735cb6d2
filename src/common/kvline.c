#include "kvline.h"

#include <stdio.h>
#include <string.h>

#include "jsonw.h"

size_t kvline_split(char *text, struct kv *f, size_t max)
{
    size_t n = 0;
    char *save = NULL;
    for (char *t = strtok_r(text, " ", &save); t && n < max; t = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(t, '=');
        if (eq)
            *eq = '\0';
        f[n++] = (struct kv){t, eq ? eq + 1 : ""};
    }
    return n;
}

const char *kvline_get(const struct kv *f, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(f[i].key, key) == 0)
            return f[i].value;
    return NULL;
}

int kvline_number(const char *s)
{
    s += *s == '-';
    if (*s == '0')
        s++;
    else if (*s >= '1' && *s <= '9')
        s += strspn(s, "0123456789");
    else
        return 0;
    if (*s == '.') {
        size_t d = strspn(s + 1, "0123456789");
        if (d == 0)
            return 0;
        s += 1 + d;
    }
    return *s == '\0';
}

int kvline_txn_pair(const struct kv *f, unsigned long long *items, unsigned long long *multis)
{
    int end = 0;
    return strncmp(f->key, "txn.", 4) == 0 &&
           sscanf(f->value, "%llu/%llu%n", items, multis, &end) == 2 && f->value[end] == '\0';
}

void kvline_json(struct jsonw *w, const struct kv *f)
{
    unsigned long long items, multis;
    if (strcmp(f->value, "-") == 0) {
        jsonw_null(w, f->key); /* no samples yet */
    } else if (kvline_txn_pair(f, &items, &multis)) {
        jsonw_obj_begin(w, f->key);
        jsonw_uint(w, "items", items);
        jsonw_uint(w, "multis", multis);
        jsonw_obj_end(w);
    } else if (kvline_number(f->value)) {
        jsonw_raw(w, f->key, f->value);
    } else {
        jsonw_str(w, f->key, f->value);
    }
}
