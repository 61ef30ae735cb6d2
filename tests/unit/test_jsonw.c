#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "jsonw.h"

static char *render(void (*fill)(struct jsonw *))
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct jsonw w;
    jsonw_init(&w, f);
    fill(&w);
    fclose(f);
    return buf;
}

static void nested(struct jsonw *w)
{
    jsonw_obj_begin(w, NULL);
    jsonw_str(w, "queue", "emails");
    jsonw_bool(w, "paused", 0);
    jsonw_arr_begin(w, "jobs");
    jsonw_obj_begin(w, NULL);
    jsonw_uint(w, "due", 18446744073709551615ULL);
    jsonw_int(w, "left", -5);
    jsonw_obj_end(w);
    jsonw_obj_begin(w, NULL);
    jsonw_null(w, "holder");
    jsonw_obj_end(w);
    jsonw_arr_end(w);
    jsonw_arr_begin(w, "empty");
    jsonw_arr_end(w);
    jsonw_double(w, "rate", 2.5);
    jsonw_obj_end(w);
    jsonw_finish(w);
}

static void strings(struct jsonw *w)
{
    static const char raw[] = "q\"\\\n\t\x01\x7f" "\xc3\xa9" "\xff" "\xe2\x82";
    jsonw_arr_begin(w, NULL);
    jsonw_strn(w, NULL, raw, sizeof raw - 1);
    jsonw_str(w, NULL, NULL);
    jsonw_double(w, NULL, 1.0 / 0.0);
    jsonw_base64(w, NULL, "", 0);
    jsonw_base64(w, NULL, "f", 1);
    jsonw_base64(w, NULL, "fo", 2);
    jsonw_base64(w, NULL, "foobar", 6);
    jsonw_base64(w, NULL, "\xff\x00\xfe", 3);
    jsonw_arr_end(w);
}

int main(void)
{
    char *s = render(nested);
    CHECK_STR(s, "{\"queue\":\"emails\",\"paused\":false,\"jobs\":[{\"due\":18446744073709551615,"
                 "\"left\":-5},{\"holder\":null}],\"empty\":[],\"rate\":2.5}\n");
    free(s);
    s = render(strings);
    /* valid UTF-8 (é) stays; a stray byte and a cut sequence become \u00XX escapes */
    CHECK_STR(s, "[\"q\\\"\\\\\\n\\t\\u0001\\u007f\xc3\xa9\\u00ff\\u00e2\\u0082\",null,null,\"\",\"Zg==\",\"Zm8=\",\"Zm9vYmFy\",\"/wD+\"]");
    free(s);
    return check_report("jsonw");
}
