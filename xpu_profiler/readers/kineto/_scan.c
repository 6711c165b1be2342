/*
 * The native scanner of Chrome/Kineto trace events: one pass over the bytes of a chunk of
 * the events array ("[" events "]") that writes the fields the model reads into flat
 * arrays, with no Python object per event (names are interned once, as UTF-8, and made
 * str objects at the end).
 *
 * It reads the common, well-formed case and nothing else: any event it does not take
 * exactly as the typed decoder would (an escape in a key, a number where a string goes,
 * a Begin/End event, a duplicate key, a syntax error, nesting deeper than MAX_DEPTH...)
 * makes scan() return None, and the caller decodes that chunk with the pure-Python reader,
 * which is the reference (the tests hold the two equal on every input they make). Every
 * read is checked against the buffer's end.
 *
 * scan(buffer, phase_codes) -> None | tuple (see the end of this file for its fields).
 * phase_codes: 256 bytes, the ph letter's code (schema.PH_IDS; 255: no phase this scanner
 * takes). The GIL is released while scanning.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64
#define NO_PHASE 255

/* ---- growable arrays ------------------------------------------------------------------ */

typedef struct {
    char *p;
    size_t n, cap, item;
} Vec;

static int vec_grow(Vec *v) {
    size_t cap = v->cap ? v->cap * 2 : 1024;
    char *p = realloc(v->p, cap * v->item);
    if (!p) return -1;
    v->p = p;
    v->cap = cap;
    return 0;
}

/* ---- interned strings: open addressing over (hash, offset, length) into an arena -------- */

typedef struct {
    char *arena;
    size_t used, cap;
    int64_t *off;  /* per id: offset into the arena */
    int64_t *len;
    size_t n, ncap;
    int32_t *slots; /* id + 1; 0 empty */
    uint64_t *hashes;
    size_t nslots;
} Strings;

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ULL ^ n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) { /* eight bytes a step: names run to hundreds of bytes */
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0x9E3779B97F4A7C15ULL;
        h ^= h >> 29;
    }
    for (; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h ^ (h >> 32);
}

static int strings_grow(Strings *t) {
    size_t ns = t->nslots ? t->nslots * 2 : 4096;
    int32_t *slots = calloc(ns, sizeof(int32_t));
    uint64_t *hashes = calloc(ns, sizeof(uint64_t));
    if (!slots || !hashes) {
        free(slots);
        free(hashes);
        return -1;
    }
    for (size_t i = 0; i < t->nslots; i++) {
        if (!t->slots[i]) continue;
        size_t j = t->hashes[i] & (ns - 1);
        while (slots[j]) j = (j + 1) & (ns - 1);
        slots[j] = t->slots[i];
        hashes[j] = t->hashes[i];
    }
    free(t->slots);
    free(t->hashes);
    t->slots = slots;
    t->hashes = hashes;
    t->nslots = ns;
    return 0;
}

/* the id of s[0:n], added when new; -1 when out of memory */
static int32_t strings_intern(Strings *t, const char *s, size_t n) {
    if ((t->n + 1) * 2 > t->nslots && strings_grow(t) < 0) return -1;
    uint64_t h = hash_bytes(s, n);
    size_t j = h & (t->nslots - 1);
    while (t->slots[j]) {
        int32_t id = t->slots[j] - 1;
        if (t->hashes[j] == h && (size_t)t->len[id] == n && memcmp(t->arena + t->off[id], s, n) == 0) return id;
        j = (j + 1) & (t->nslots - 1);
    }
    if (t->n >= INT32_MAX - 1) return -1;
    if (t->used + n > t->cap) {
        size_t cap = t->cap ? t->cap : 65536;
        while (cap < t->used + n) cap *= 2;
        char *a = realloc(t->arena, cap);
        if (!a) return -1;
        t->arena = a;
        t->cap = cap;
    }
    if (t->n == t->ncap) {
        size_t c = t->ncap ? t->ncap * 2 : 1024;
        int64_t *o = realloc(t->off, c * sizeof(int64_t));
        if (!o) return -1;
        t->off = o;
        int64_t *l = realloc(t->len, c * sizeof(int64_t));
        if (!l) return -1;
        t->len = l;
        t->ncap = c;
    }
    memcpy(t->arena + t->used, s, n);
    t->off[t->n] = (int64_t)t->used;
    t->len[t->n] = (int64_t)n;
    t->used += n;
    t->slots[j] = (int32_t)t->n + 1;
    t->hashes[j] = h;
    return (int32_t)t->n++;
}

static void strings_free(Strings *t) {
    free(t->arena);
    free(t->off);
    free(t->len);
    free(t->slots);
    free(t->hashes);
}

/* ---- the parser ----------------------------------------------------------------------- */

enum { T_NONE = 0, T_STR, T_INT, T_NUM, T_NULL, T_BOOL, T_OBJ, T_ARR };

typedef struct {
    unsigned char type;
    unsigned char escaped; /* a string with a backslash in it */
    size_t start, end;     /* the value's bytes (a string's without its quotes) */
} Span;

typedef struct {
    const unsigned char *b;
    size_t n, i;
    char *tmp; /* unescaped string bytes */
    size_t tmpcap;
} P;

static inline void ws(P *p) {
    while (p->i < p->n) {
        unsigned char c = p->b[p->i];
        if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return;
        p->i++;
    }
}

static int hexval(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* a string at p->i (on its opening quote): its span; 0 ok, -1 not taken */
#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL
/* whether any byte of w is a quote, a backslash or a control character (eight at a time) */
static inline uint64_t special(uint64_t w) {
    uint64_t q = w ^ (ONES * '"'), b = w ^ (ONES * '\\');
    return (((q - ONES) & ~q) | ((b - ONES) & ~b) | ((w - ONES * 0x20) & ~w)) & HIGHS;
}

static int string_span(P *p, Span *s) {
    size_t i = p->i + 1;
    s->escaped = 0;
    s->start = i;
#ifdef __SSE2__
    /* the plain run of the string, sixteen bytes a step, onto its first special byte */
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), ctl = _mm_set1_epi8(0x1F);
    while (i + 16 <= p->n) {
        __m128i x = _mm_loadu_si128((const __m128i *)(p->b + i));
        __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, backslash)),
                                   _mm_cmpeq_epi8(_mm_min_epu8(x, ctl), x)); /* x <= 0x1F */
        int m = _mm_movemask_epi8(hit);
        if (m) {
            i += (size_t)__builtin_ctz((unsigned)m);
            goto special_byte; /* on it: the eight-byte steps below would find it again */
        }
        i += 16;
    }
#endif
    while (i + 8 <= p->n) { /* the plain run of the string, eight bytes a step */
        uint64_t w;
        memcpy(&w, p->b + i, 8);
        if (special(w)) break;
        i += 8;
    }
#ifdef __SSE2__
special_byte:
#endif
    while (i < p->n) {
        unsigned char c = p->b[i];
        if (c == '"') {
            s->end = i;
            s->type = T_STR;
            p->i = i + 1;
            return 0;
        }
        if (c < 0x20) return -1;
        if (c == '\\') { /* checked here, resolved only for the strings kept (unescape) */
            s->escaped = 1;
            if (i + 1 >= p->n) return -1;
            unsigned char e = p->b[i + 1];
            if (e == 'u') {
                if (i + 6 > p->n) return -1;
                for (int k = 2; k < 6; k++) {
                    if (hexval(p->b[i + k]) < 0) return -1;
                }
                i += 6;
                continue;
            }
            if (!strchr("\"\\/bfnrt", e) || e == 0) return -1;
            i += 2;
            continue;
        }
        i++;
    }
    return -1;
}


/* a string's bytes with its escapes resolved (UTF-8), in p->tmp; its length, -1 not taken.
   A lone surrogate is not taken (the reference refuses it). */
static ssize_t unescape(P *p, const Span *s) {
    size_t need = s->end - s->start;
    if (need > p->tmpcap) {
        char *t = realloc(p->tmp, need);
        if (!t) return -1;
        p->tmp = t;
        p->tmpcap = need;
    }
    size_t o = 0;
    for (size_t i = s->start; i < s->end;) {
        unsigned char c = p->b[i];
        if (c != '\\') {
            p->tmp[o++] = (char)c;
            i++;
            continue;
        }
        if (i + 1 >= s->end) return -1;
        unsigned char e = p->b[i + 1];
        i += 2;
        switch (e) {
            case '"': p->tmp[o++] = '"'; break;
            case '\\': p->tmp[o++] = '\\'; break;
            case '/': p->tmp[o++] = '/'; break;
            case 'b': p->tmp[o++] = '\b'; break;
            case 'f': p->tmp[o++] = '\f'; break;
            case 'n': p->tmp[o++] = '\n'; break;
            case 'r': p->tmp[o++] = '\r'; break;
            case 't': p->tmp[o++] = '\t'; break;
            case 'u': {
                if (i + 4 > s->end) return -1;
                int cp = 0;
                for (int k = 0; k < 4; k++) {
                    int h = hexval(p->b[i + k]);
                    if (h < 0) return -1;
                    cp = cp * 16 + h;
                }
                i += 4;
                if (cp >= 0xDC00 && cp <= 0xDFFF) return -1; /* a lone low surrogate */
                if (cp >= 0xD800 && cp <= 0xDBFF) {          /* a pair, or declined */
                    if (i + 6 > s->end || p->b[i] != '\\' || p->b[i + 1] != 'u') return -1;
                    int lo = 0;
                    for (int k = 2; k < 6; k++) {
                        int h = hexval(p->b[i + k]);
                        if (h < 0) return -1;
                        lo = lo * 16 + h;
                    }
                    if (lo < 0xDC00 || lo > 0xDFFF) return -1;
                    i += 6;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    p->tmp[o++] = (char)(0xF0 | (cp >> 18));
                    p->tmp[o++] = (char)(0x80 | ((cp >> 12) & 0x3F));
                    p->tmp[o++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                    p->tmp[o++] = (char)(0x80 | (cp & 0x3F));
                    break; /* 12 input bytes give 4 */
                }
                if (cp < 0x80) {
                    p->tmp[o++] = (char)cp;
                } else if (cp < 0x800) {
                    p->tmp[o++] = (char)(0xC0 | (cp >> 6));
                    p->tmp[o++] = (char)(0x80 | (cp & 0x3F));
                } else {
                    p->tmp[o++] = (char)(0xE0 | (cp >> 12));
                    p->tmp[o++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                    p->tmp[o++] = (char)(0x80 | (cp & 0x3F));
                }
                break; /* 6 input bytes give at most 3: the buffer is long enough */
            }
            default: return -1;
        }
    }
    return (ssize_t)o;
}

/* a JSON number at p->i: T_INT (no fraction, no exponent) or T_NUM; -1 not JSON */
static int number_span(P *p, Span *s) {
    size_t i = p->i;
    s->start = i;
    int is_int = 1;
    if (i < p->n && p->b[i] == '-') i++;
    if (i >= p->n) return -1;
    if (p->b[i] == '0') {
        i++;
    } else if (p->b[i] >= '1' && p->b[i] <= '9') {
        while (i < p->n && p->b[i] >= '0' && p->b[i] <= '9') i++;
    } else {
        return -1;
    }
    if (i < p->n && p->b[i] == '.') {
        is_int = 0;
        i++;
        size_t d = i;
        while (i < p->n && p->b[i] >= '0' && p->b[i] <= '9') i++;
        if (i == d) return -1;
    }
    if (i < p->n && (p->b[i] == 'e' || p->b[i] == 'E')) {
        is_int = 0;
        i++;
        if (i < p->n && (p->b[i] == '+' || p->b[i] == '-')) i++;
        size_t d = i;
        while (i < p->n && p->b[i] >= '0' && p->b[i] <= '9') i++;
        if (i == d) return -1;
    }
    s->end = i;
    s->type = is_int ? T_INT : T_NUM;
    p->i = i;
    return 0;
}

static int value(P *p, Span *s, int depth);

/* after a member or an element: 1 another follows (its "," skipped), 0 the container closes
   (its `close` skipped), -1 neither */
static inline int next_item(P *p, unsigned char close) {
    ws(p);
    if (p->i >= p->n) return -1;
    if (p->b[p->i] == ',') {
        p->i++;
        ws(p);
        return 1;
    }
    if (p->b[p->i] != close) return -1;
    p->i++;
    return 0;
}

/* skip an object or array (p->i on its opening bracket), checking its syntax */
static int container(P *p, Span *s, int depth) {
    if (depth > MAX_DEPTH) return -1;
    unsigned char open = p->b[p->i];
    unsigned char close = open == '{' ? '}' : ']';
    s->type = open == '{' ? T_OBJ : T_ARR;
    s->start = p->i;
    p->i++;
    ws(p);
    if (p->i < p->n && p->b[p->i] == close) {
        p->i++;
        s->end = p->i;
        return 0;
    }
    Span tmp;
    for (;;) {
        if (open == '{') {
            if (p->i >= p->n || p->b[p->i] != '"' || string_span(p, &tmp) < 0) return -1;
            ws(p);
            if (p->i >= p->n || p->b[p->i] != ':') return -1;
            p->i++;
            ws(p);
        }
        if (value(p, &tmp, depth + 1) < 0) return -1;
        int more = next_item(p, close);
        if (more < 0) return -1;
        if (more) continue;
        s->end = p->i;
        return 0;
    }
}

static int literal(P *p, const char *word, size_t len) {
    if (p->i + len > p->n || memcmp(p->b + p->i, word, len) != 0) return -1;
    p->i += len;
    return 0;
}

/* any value at p->i (whitespace skipped before); its span */
static int value(P *p, Span *s, int depth) {
    if (p->i >= p->n) return -1;
    unsigned char c = p->b[p->i];
    s->escaped = 0;
    if (c == '"') return string_span(p, s);
    if (c == '{' || c == '[') return container(p, s, depth);
    s->start = p->i;
    if (c == 't') {
        s->type = T_BOOL;
        if (literal(p, "true", 4) < 0) return -1;
    } else if (c == 'f') {
        s->type = T_BOOL;
        if (literal(p, "false", 5) < 0) return -1;
    } else if (c == 'n') {
        s->type = T_NULL;
        if (literal(p, "null", 4) < 0) return -1;
    } else {
        return number_span(p, s);
    }
    s->end = p->i;
    return 0;
}

/* ---- the keys read ---------------------------------------------------------------------- */

enum { K_PH, K_NAME, K_CAT, K_PID, K_TID, K_TS, K_DUR, K_ARGS, N_TOP };
static const char *TOP_KEYS[N_TOP] = {"ph", "name", "cat", "pid", "tid", "ts", "dur", "args"};

enum {
    A_EXT, A_CORR, A_KERNEL, A_KIND,
    A_COLL, A_PG, A_PG_RANKS, A_SEQ, A_IN, A_OUT, A_GROUP, A_DTYPE, /* the collective's, raw */
    A_FLOPS, A_BYTES, A_DIMS, A_ALLOC, A_RESERVED, A_DEVTYPE, A_NAME, N_ARGS
};
#define N_COMM 8
static const char *ARG_KEYS[N_ARGS] = {
    "External id", "correlation", "kernel", "kind",
    "Collective name", "Process Group Name", "Process Group Ranks", "Seq", "In msg nelems",
    "Out msg nelems", "Group size", "dtype",
    "flops", "bytes", "Input Dims", "Total Allocated", "Total Reserved", "Device Type", "name"};

#define KEY_MAX 24 /* no key read is longer */
#define SAME_LEN 4  /* nor do more than this many share a length */
/* the keys of each length (indices, -1 after the last): set at import */
static signed char TOP_BY_LEN[KEY_MAX][SAME_LEN], ARG_BY_LEN[KEY_MAX][SAME_LEN];

static int index_keys(const char **keys, int count, signed char by_len[KEY_MAX][SAME_LEN]) {
    memset(by_len, -1, KEY_MAX * SAME_LEN);
    for (int k = 0; k < count; k++) {
        size_t n = strlen(keys[k]);
        int j = 0;
        while (n < KEY_MAX && j < SAME_LEN && by_len[n][j] >= 0) j++;
        if (n >= KEY_MAX || j == SAME_LEN) return -1;
        by_len[n][j] = (signed char)k;
    }
    return 0;
}

static inline int key_index(const unsigned char *s, size_t n, const char **keys, signed char by_len[KEY_MAX][SAME_LEN]) {
    if (n >= KEY_MAX || n == 0) return -1;
    for (int j = 0; j < SAME_LEN; j++) {
        int k = by_len[n][j];
        if (k < 0) return -1;
        const char *w = keys[k]; /* compared inline: a call to memcmp cost more than these few bytes */
        size_t c = 0;
        while (c < n && (unsigned char)w[c] == s[c]) c++;
        if (c == n) return k;
    }
    return -1;
}

/* ---- numbers ---------------------------------------------------------------------------- */

/* an integer literal that fits int64 */
static int to_int64(P *p, const Span *s, int64_t *out) {
    size_t i = s->start;
    int neg = 0;
    if (p->b[i] == '-') {
        neg = 1;
        i++;
    }
    uint64_t v = 0;
    for (; i < s->end; i++) {
        unsigned d = p->b[i] - '0';
        if (v > (UINT64_MAX - d) / 10) return -1;
        v = v * 10 + d;
    }
    if (neg) {
        if (v > (uint64_t)INT64_MAX + 1) return -1;
        *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    } else {
        if (v > (uint64_t)INT64_MAX) return -1;
        *out = (int64_t)v;
    }
    return 0;
}

static const double POW10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* a JSON number as the nearest double (as the reference parses it) */
static int to_double(P *p, const Span *s, double *out) {
    /* exact fast path: at most 15 digits and no exponent, as mantissa / 10^k (both exact
       doubles, so the one division is correctly rounded) */
    size_t i = s->start;
    int neg = 0;
    if (p->b[i] == '-') {
        neg = 1;
        i++;
    }
    uint64_t m = 0;
    int digits = 0, frac = 0, seen_dot = 0, simple = 1;
    for (; i < s->end; i++) {
        unsigned char c = p->b[i];
        if (c == '.') {
            seen_dot = 1;
            continue;
        }
        if (c == 'e' || c == 'E') {
            simple = 0;
            break;
        }
        if (m || c != '0') digits++;
        if (digits > 15) {
            simple = 0;
            break;
        }
        m = m * 10 + (c - '0');
        if (seen_dot) frac++;
    }
    if (simple && frac <= 22) {
        double v = (double)m / POW10[frac];
        *out = neg && (m || s->type == T_NUM) ? -v : v; /* "-0" is the integer 0, "-0.0" the double */
        return 0;
    }
    size_t len = s->end - s->start;
    char buf[128];
    if (len >= sizeof(buf)) return -1;
    memcpy(buf, p->b + s->start, len);
    buf[len] = 0;
    char *end;
    *out = strtod(buf, &end);
    return end == buf + len ? 0 : -1;
}

/* ---- one event ---------------------------------------------------------------------------- */

typedef struct {
    Span top[N_TOP];
    Span args[N_ARGS];
    uint32_t top_set, args_set; /* which spans hold a value: cleared after each event */
} Ev;

/* ready for the next event: only the spans set are cleared (not the whole struct) */
static inline void ev_clear(Ev *ev) {
    for (int k = 0; ev->top_set; k++, ev->top_set >>= 1) {
        if (ev->top_set & 1) ev->top[k].type = T_NONE;
    }
    for (int k = 0; ev->args_set; k++, ev->args_set >>= 1) {
        if (ev->args_set & 1) ev->args[k].type = T_NONE;
    }
}

/* the members of the object at p->i (on its "{"): each known key's value span into the event's
   slots (level 0: the event's keys, "args" one level down; level 1: the args' keys); -1 not
   taken (a duplicate key among them included) */
static int members(P *p, int level, Ev *ev) {
    const char **keys = level ? ARG_KEYS : TOP_KEYS;
    Span *slots = level ? ev->args : ev->top;
    uint32_t *set = level ? &ev->args_set : &ev->top_set;
    p->i++;
    ws(p);
    if (p->i < p->n && p->b[p->i] == '}') {
        p->i++;
        return 0;
    }
    for (;;) {
        Span key, skipped;
        if (p->i >= p->n || p->b[p->i] != '"' || string_span(p, &key) < 0 || key.escaped) return -1;
        ws(p);
        if (p->i >= p->n || p->b[p->i] != ':') return -1;
        p->i++;
        ws(p);
        int k = key_index(p->b + key.start, key.end - key.start, keys, level ? ARG_BY_LEN : TOP_BY_LEN);
        /* a known key's value is parsed into its slot (copying a span just written stalls the
           load on the stores), an unknown key's into a scratch span */
        Span *val = &skipped;
        if (k >= 0) {
            if (*set & (1u << k)) return -1;
            val = &slots[k];
        }
        if (level == 0 && k == K_ARGS && p->i < p->n && p->b[p->i] == '{') {
            val->start = p->i;
            if (members(p, 1, ev) < 0) return -1;
            val->type = T_OBJ;
            val->escaped = 0;
            val->end = p->i;
        } else if (value(p, val, level + 1) < 0) {
            return -1;
        }
        if (k >= 0) *set |= 1u << k;
        int more = next_item(p, '}');
        if (more <= 0) return more;
    }
}

/* the event object at p->i, its known keys' spans in ev; -1 not taken */
static int event(P *p, Ev *ev) {
    ev_clear(ev);
    if (p->i >= p->n || p->b[p->i] != '{') return -1;
    return members(p, 0, ev);
}

/* ---- the scan ----------------------------------------------------------------------------- */

typedef struct {
    Strings names;  /* every event's name and category, kernels, thread names */
    Vec ev_ph, ev_name; /* per event: phase code (int8), name id (int32, -1 none) */
    /* per complete (X) event */
    Vec x_idx, x_name, x_cat, x_pid, x_tid, x_ts, x_dur, x_ext, x_corr, x_kernel, x_kind, x_flops, x_bytes;
    Vec x_dims;  /* (start, end) of the raw Input Dims, (0, 0) none */
    Vec x_strs;  /* the fields written as strings: ids of pid, tid, args kind, args bytes; -1 none */
    Vec comm;    /* (row, 8 x (start, end)) of the X events that carry collective fields */
    /* per instant */
    Vec i_idx, i_name, i_ts, i_alloc, i_reserved, i_devtype;
    /* per metadata event: (index, name id, pid, tid, arg name id or -1, pid and tid string ids or -1) */
    Vec meta;
} Out;

static void out_init(Out *o) {
    memset(o, 0, sizeof(*o));
    o->ev_ph.item = 1;
    o->ev_name.item = o->x_name.item = o->x_cat.item = o->x_kernel.item = o->i_name.item = 4;
    o->x_idx.item = o->x_pid.item = o->x_tid.item = o->x_ts.item = o->x_dur.item = o->x_ext.item = 8;
    o->x_corr.item = o->x_kind.item = o->x_flops.item = o->x_bytes.item = 8;
    o->i_idx.item = o->i_ts.item = o->i_alloc.item = o->i_reserved.item = o->i_devtype.item = 8;
    o->x_dims.item = o->x_strs.item = 16;
    o->comm.item = 8 * (1 + 2 * N_COMM);
    o->meta.item = 8 * 7;
}

/* a string value's id; -1 not taken (-2: out of memory) */
static int32_t intern_span(P *p, Strings *t, const Span *s) {
    if (!s->escaped) return strings_intern(t, (const char *)p->b + s->start, s->end - s->start);
    ssize_t n = unescape(p, s);
    if (n < 0) return -1;
    return strings_intern(t, p->tmp, (size_t)n);
}

/* x appended to v (its size known here, so the copy is a plain store); -1 out of memory or
   an item of another size than the vector's */
#define PUSH(v, x) \
    do { \
        if (sizeof(x) != (v).item || ((v).n == (v).cap && vec_grow(&(v)) < 0)) return -1; \
        memcpy((v).p + (v).n * sizeof(x), &(x), sizeof(x)); \
        (v).n++; \
    } while (0)

static int take_int(P *p, const Span *s, int64_t dflt, int64_t *out) {
    if (!s->type) {
        *out = dflt;
        return 0;
    }
    if (s->type != T_INT) return -1;
    return to_int64(p, s, out);
}

static int take_num(P *p, const Span *s, double *out) {
    if (!s->type) {
        *out = NAN;
        return 0;
    }
    if (s->type != T_INT && s->type != T_NUM) return -1;
    return to_double(p, s, out);
}

/* an integer field that may be written as a string (pid, tid, a copy's kind): the integer, or
   the string's id in *sid */
static int take_int_or_str(P *p, Out *o, const Span *s, int64_t dflt, int64_t *out, int32_t *sid) {
    if (s->type == T_STR) {
        *out = dflt;
        *sid = intern_span(p, &o->names, s);
        return *sid < 0 ? -1 : 0;
    }
    return take_int(p, s, dflt, out);
}

/* the name (a string, "" when absent) of an event: its id */
static int name_id(P *p, Out *o, const Span *s, int32_t *id) {
    if (!s->type) {
        *id = strings_intern(&o->names, "", 0);
        return *id < 0 ? -1 : 0;
    }
    if (s->type != T_STR) return -1;
    *id = intern_span(p, &o->names, s);
    return *id < 0 ? -1 : 0;
}

/* one event into the columns; -1 not taken */
static int take(P *p, Out *o, const Ev *ev, int64_t index, const unsigned char *codes) {
    const Span *ph = &ev->top[K_PH];
    if (ph->type != T_STR || ph->escaped || ph->end - ph->start != 1) return -1;
    unsigned char code = codes[p->b[ph->start]];
    if (code == NO_PHASE) return -1;
    int8_t c8 = (int8_t)code;
    PUSH(o->ev_ph, c8);
    int32_t nid;
    if (name_id(p, o, &ev->top[K_NAME], &nid) < 0) return -1;
    PUSH(o->ev_name, nid);
    if (code >= 10) return 0; /* a phase the analysis does not use: only its name is read */
    /* the core fields of the phases read: typed as the reference's schema types them */
    const Span *cat = &ev->top[K_CAT];
    if (cat->type && cat->type != T_STR) return -1;
    int64_t pid, tid;
    int32_t strs[4] = {-1, -1, -1, -1}; /* pid, tid, kind, bytes written as strings */
    if (take_int_or_str(p, o, &ev->top[K_PID], 0, &pid, &strs[0]) < 0) return -1;
    if (take_int_or_str(p, o, &ev->top[K_TID], 0, &tid, &strs[1]) < 0) return -1;
    double ts, dur;
    if (take_num(p, &ev->top[K_TS], &ts) < 0 || take_num(p, &ev->top[K_DUR], &dur) < 0) return -1;
    const Span *args = &ev->top[K_ARGS];
    if (args->type && args->type != T_OBJ) return -1;
    const Span *a = ev->args;
    if (code == 0) { /* complete event */
        int32_t cid;
        if (name_id(p, o, cat, &cid) < 0) return -1;
        int64_t ext, corr, kind;
        if (take_int(p, &a[A_EXT], -1, &ext) < 0 || take_int(p, &a[A_CORR], -1, &corr) < 0) return -1;
        if (take_int_or_str(p, o, &a[A_KIND], -1, &kind, &strs[2]) < 0) return -1;
        int32_t kernel = -1;
        if (a[A_KERNEL].type == T_STR) {
            kernel = intern_span(p, &o->names, &a[A_KERNEL]);
            if (kernel < 0) return -1;
        } else if (a[A_KERNEL].type && a[A_KERNEL].type != T_NULL) {
            return -1;
        }
        double flops, bytes;
        if (take_num(p, &a[A_FLOPS], &flops) < 0) return -1;
        if (a[A_BYTES].type == T_STR) { /* a numeric string (ROCm): converted as the reference does */
            bytes = NAN;
            strs[3] = intern_span(p, &o->names, &a[A_BYTES]);
            if (strs[3] < 0) return -1;
        } else if (take_num(p, &a[A_BYTES], &bytes) < 0) {
            return -1;
        }
        int64_t dims[2] = {0, 0};
        if (a[A_DIMS].type) {
            dims[0] = (int64_t)a[A_DIMS].start - (a[A_DIMS].type == T_STR);
            dims[1] = (int64_t)a[A_DIMS].end + (a[A_DIMS].type == T_STR);
        }
        int has_comm = 0;
        for (int k = 0; k < N_COMM; k++) has_comm |= a[A_COLL + k].type != T_NONE;
        if (has_comm) {
            int64_t row[1 + 2 * N_COMM];
            row[0] = (int64_t)o->x_idx.n;
            for (int k = 0; k < N_COMM; k++) {
                const Span *v = &a[A_COLL + k];
                int q = v->type == T_STR; /* a string's raw bytes include its quotes */
                row[1 + 2 * k] = v->type ? (int64_t)v->start - q : 0;
                row[2 + 2 * k] = v->type ? (int64_t)v->end + q : 0;
            }
            PUSH(o->comm, row);
        }
        PUSH(o->x_idx, index);
        PUSH(o->x_name, nid);
        PUSH(o->x_cat, cid);
        PUSH(o->x_pid, pid);
        PUSH(o->x_tid, tid);
        PUSH(o->x_ts, ts);
        PUSH(o->x_dur, dur);
        PUSH(o->x_ext, ext);
        PUSH(o->x_corr, corr);
        PUSH(o->x_kernel, kernel);
        PUSH(o->x_kind, kind);
        PUSH(o->x_flops, flops);
        PUSH(o->x_bytes, bytes);
        PUSH(o->x_dims, dims);
        PUSH(o->x_strs, strs);
        return 0;
    }
    if (code == 1) { /* an instant */
        double alloc, reserved;
        int64_t devtype;
        if (take_num(p, &a[A_ALLOC], &alloc) < 0 || take_num(p, &a[A_RESERVED], &reserved) < 0) return -1;
        if (take_int(p, &a[A_DEVTYPE], -1, &devtype) < 0) return -1;
        PUSH(o->i_idx, index);
        PUSH(o->i_name, nid);
        PUSH(o->i_ts, ts);
        PUSH(o->i_alloc, alloc);
        PUSH(o->i_reserved, reserved);
        PUSH(o->i_devtype, devtype);
        return 0;
    }
    if (code == 2) { /* metadata */
        int64_t arg = -1;
        if (a[A_NAME].type == T_STR) {
            int32_t id = intern_span(p, &o->names, &a[A_NAME]);
            if (id < 0) return -1;
            arg = id;
        } else if (a[A_NAME].type && a[A_NAME].type != T_NULL) {
            return -1;
        }
        int64_t row[7] = {index, nid, pid, tid, arg, strs[0], strs[1]};
        PUSH(o->meta, row);
        return 0;
    }
    return -1; /* Begin/End and async events: the reference pairs them */
}

/* the whole chunk; 0 taken, -1 not */
static int scan_all(P *p, Out *o, const unsigned char *codes, int64_t *n_events) {
    ws(p);
    if (p->i >= p->n || p->b[p->i] != '[') return -1;
    p->i++;
    ws(p);
    int64_t index = 0;
    if (p->i < p->n && p->b[p->i] == ']') {
        p->i++;
    } else {
        Ev ev;
        memset(&ev, 0, sizeof(ev));
        for (;;) {
            if (event(p, &ev) < 0 || take(p, o, &ev, index, codes) < 0) return -1;
            index++;
            int more = next_item(p, ']');
            if (more < 0) return -1;
            if (!more) break;
        }
    }
    ws(p);
    if (p->i != p->n) return -1;
    *n_events = index;
    return 0;
}

static PyObject *vec_bytes(Vec *v) {
    return PyByteArray_FromStringAndSize(v->p ? v->p : "", (Py_ssize_t)(v->n * v->item));
}

static void out_free(Out *o) {
    strings_free(&o->names);
    Vec *vs[] = {&o->ev_ph, &o->ev_name, &o->x_idx, &o->x_name, &o->x_cat, &o->x_pid, &o->x_tid, &o->x_ts,
                 &o->x_dur, &o->x_ext, &o->x_corr, &o->x_kernel, &o->x_kind, &o->x_flops, &o->x_bytes,
                 &o->x_dims, &o->x_strs, &o->comm, &o->i_idx, &o->i_name, &o->i_ts, &o->i_alloc, &o->i_reserved,
                 &o->i_devtype, &o->meta};
    for (size_t k = 0; k < sizeof(vs) / sizeof(vs[0]); k++) free(vs[k]->p);
}

static PyObject *scan(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer buf, codes;
    if (!PyArg_ParseTuple(args, "y*y*", &buf, &codes)) return NULL;
    if (codes.len != 256) {
        PyBuffer_Release(&buf);
        PyBuffer_Release(&codes);
        PyErr_SetString(PyExc_ValueError, "phase_codes must be 256 bytes");
        return NULL;
    }
    P p = {(const unsigned char *)buf.buf, (size_t)buf.len, 0, NULL, 0};
    Out o;
    out_init(&o);
    int64_t n_events = 0;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = scan_all(&p, &o, (const unsigned char *)codes.buf, &n_events);
    Py_END_ALLOW_THREADS
    free(p.tmp);
    PyBuffer_Release(&buf);
    PyBuffer_Release(&codes);
    PyObject *result = NULL;
    if (rc < 0) {
        out_free(&o);
        Py_RETURN_NONE;
    }
    PyObject *names = PyList_New((Py_ssize_t)o.names.n);
    if (!names) goto done;
    for (size_t k = 0; k < o.names.n; k++) {
        PyObject *s = PyUnicode_DecodeUTF8(o.names.arena + o.names.off[k], (Py_ssize_t)o.names.len[k], NULL);
        if (!s) { /* not UTF-8: the reference says what it is */
            Py_DECREF(names);
            PyErr_Clear();
            out_free(&o);
            Py_RETURN_NONE;
        }
        PyList_SET_ITEM(names, (Py_ssize_t)k, s);
    }
    result = Py_BuildValue(
        "(LNNNNNNNNNNNNNNNNNNNNNNNNNN)", (long long)n_events, names, vec_bytes(&o.ev_ph), vec_bytes(&o.ev_name),
        vec_bytes(&o.x_idx), vec_bytes(&o.x_name), vec_bytes(&o.x_cat), vec_bytes(&o.x_pid), vec_bytes(&o.x_tid),
        vec_bytes(&o.x_ts), vec_bytes(&o.x_dur), vec_bytes(&o.x_ext), vec_bytes(&o.x_corr), vec_bytes(&o.x_kernel),
        vec_bytes(&o.x_kind), vec_bytes(&o.x_flops), vec_bytes(&o.x_bytes), vec_bytes(&o.x_dims), vec_bytes(&o.x_strs),
        vec_bytes(&o.comm), vec_bytes(&o.i_idx), vec_bytes(&o.i_name), vec_bytes(&o.i_ts), vec_bytes(&o.i_alloc),
        vec_bytes(&o.i_reserved), vec_bytes(&o.i_devtype), vec_bytes(&o.meta));
done:
    out_free(&o);
    return result;
}

static PyMethodDef METHODS[] = {
    {"scan", scan, METH_VARARGS,
     "scan(buffer, phase_codes) -> None | tuple: the columns of a chunk of trace events, None where the "
     "pure-Python reader must decode it."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_scan", "The native scanner of trace events.", -1,
                                    METHODS, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__scan(void) {
    if (index_keys(TOP_KEYS, N_TOP, TOP_BY_LEN) < 0 || index_keys(ARG_KEYS, N_ARGS, ARG_BY_LEN) < 0) {
        PyErr_SetString(PyExc_ImportError, "_scan: a key longer than KEY_MAX, or too many of one length");
        return NULL;
    }
    return PyModule_Create(&MODULE);
}
