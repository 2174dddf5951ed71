/* Fair connections (see "fair connections" in http.h): counts open connections per client
 * address, keeps every connection that could be given up in a list by what it is doing, picks
 * which one a newcomer evicts, and sweeps out slow ones while the server is under pressure. It
 * never evicts a connection with a request in progress, and never blocks. */
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include "http_internal.h"

enum { ADDR_BUCKETS_MIN = 256 };

/* ---- addresses ------------------------------------------------------------------------------ */

/* IPv4 (also v4-mapped IPv6) by address; IPv6 by its /64, which one client usually owns whole. */
static void addr_key(const struct sockaddr_storage *ss, unsigned char key[17])
{
    memset(key, 0, 17);
    if (ss->ss_family == AF_INET) {
        key[0] = 4;
        memcpy(key + 1, &((const struct sockaddr_in *)ss)->sin_addr, 4);
    } else if (ss->ss_family == AF_INET6) {
        const unsigned char *a = ((const struct sockaddr_in6 *)ss)->sin6_addr.s6_addr;
        static const unsigned char v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (!memcmp(a, v4mapped, 12)) {
            key[0] = 4;
            memcpy(key + 1, a + 12, 4);
        } else {
            key[0] = 6;
            memcpy(key + 1, a, 8);
        }
    }
}

static size_t addr_hash(const unsigned char key[17])
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (int i = 0; i < 17; i++)
        h = (h ^ key[i]) * 1099511628211ull;
    return (size_t)(h ^ (h >> 29));
}

static void addr_rehash(hone_http_server *s, size_t buckets)
{
    http_peer_addr **tab = hone_xcalloc(buckets, sizeof(*tab));
    for (size_t i = 0; i < s->addr_buckets; i++) {
        http_peer_addr *a = s->addrs[i], *next;
        for (; a; a = next) {
            next = a->next;
            size_t b = addr_hash(a->key) & (buckets - 1);
            a->next = tab[b];
            tab[b] = a;
        }
    }
    free(s->addrs);
    s->addrs = tab;
    s->addr_buckets = buckets;
}

static http_peer_addr *addr_ref(hone_http_server *s, const struct sockaddr_storage *ss)
{
    unsigned char key[17];
    addr_key(ss, key);
    if (!s->addrs)
        addr_rehash(s, ADDR_BUCKETS_MIN);
    size_t b = addr_hash(key) & (s->addr_buckets - 1);
    http_peer_addr *a = s->addrs[b];
    while (a && memcmp(a->key, key, sizeof(key)))
        a = a->next;
    if (!a) {
        a = hone_xcalloc(1, sizeof(*a));
        memcpy(a->key, key, sizeof(key));
        a->next = s->addrs[b];
        s->addrs[b] = a;
        if (++s->naddrs > 2 * s->addr_buckets)
            addr_rehash(s, 2 * s->addr_buckets);
    }
    a->nconns++;
    return a;
}

static void addr_unref(hone_http_server *s, http_peer_addr *a)
{
    if (--a->nconns > 0)
        return;
    http_peer_addr **pp = &s->addrs[addr_hash(a->key) & (s->addr_buckets - 1)];
    while (*pp != a)
        pp = &(*pp)->next;
    *pp = a->next;
    s->naddrs--;
    free(a);
}

/* ---- classes -------------------------------------------------------------------------------- */

static int conn_class(const hone_http_conn *c)
{
    if (c->lingering)
        return HTTP_CLASS_LINGER;
    if (c->head || c->writes_pending || c->stop_parsing || c->close_after_flush)
        return HTTP_CLASS_BUSY;
    if (c->msg_start_ms) /* a head still coming in, or a body (busy) */
        return c->cur && c->cur->method[0] ? HTTP_CLASS_BUSY : HTTP_CLASS_HEADERS;
    return c->got_bytes ? HTTP_CLASS_IDLE : HTTP_CLASS_FRESH;
}

static void list_unlink(hone_http_server *s, hone_http_conn *c)
{
    http_conn_list *l = &s->classes[c->klass];
    if (c->kprev)
        c->kprev->knext = c->knext;
    else
        l->head = c->knext;
    if (c->knext)
        c->knext->kprev = c->kprev;
    else
        l->tail = c->kprev;
    c->kprev = c->knext = NULL;
}

static void list_append(hone_http_server *s, hone_http_conn *c)
{
    http_conn_list *l = &s->classes[c->klass];
    c->knext = NULL;
    c->kprev = l->tail;
    if (l->tail)
        l->tail->knext = c;
    else
        l->head = c;
    l->tail = c;
}

void http_fair_update(hone_http_conn *c)
{
    if (c->fake || c->closing || !c->live)
        return;
    int k = conn_class(c);
    if (k == c->klass)
        return;
    hone_http_server *s = c->server;
    if (c->klass != HTTP_CLASS_BUSY)
        list_unlink(s, c);
    c->klass = k;
    c->klass_since_ms = uv_now(s->loop);
    if (k != HTTP_CLASS_BUSY)
        list_append(s, c);
}

void http_fair_forget(hone_http_conn *c)
{
    hone_http_server *s = c->server;
    if (!c->live)
        return;
    if (c->klass != HTTP_CLASS_BUSY)
        list_unlink(s, c);
    c->klass = HTTP_CLASS_BUSY;
    c->live = 0;
    s->nlive--;
    if (c->reserve)
        s->nreserve--;
    addr_unref(s, c->addr);
    c->addr = NULL;
}

/* ---- eviction ------------------------------------------------------------------------------- */

/* Bytes have arrived that the loop has not read yet (the client did send, it just has not been
 * its turn): such a connection is not one that never sent a byte. */
static int unread_bytes(hone_http_conn *c)
{
    uv_os_fd_t fd;
    int n = 0;
    if (uv_fileno((uv_handle_t *)&c->tcp, &fd) != 0 || ioctl(fd, FIONREAD, &n) != 0)
        return 0;
    return n > 0;
}

/* The connection to give up for a newcomer (of address a, or anyone's when a is NULL), or NULL
 * when every candidate is busy. A head that has been arriving for a quarter of busy_timeout_ms
 * is a slow client, not one that sent its request in one go. */
static hone_http_conn *victim(hone_http_server *s, const http_peer_addr *a)
{
    static const int order[] = {HTTP_CLASS_FRESH, HTTP_CLASS_LINGER, HTTP_CLASS_IDLE,
                                HTTP_CLASS_HEADERS};
    uint64_t now = uv_now(s->loop), slow = s->limits.busy_timeout_ms / 4;
    for (size_t i = 0; i < HONE_ARRAY_LEN(order); i++) {
        for (hone_http_conn *c = s->classes[order[i]].head; c; c = c->knext) {
            if (order[i] == HTTP_CLASS_HEADERS && now - c->klass_since_ms < slow)
                break; /* the rest came later still */
            if ((!a || c->addr == a) && (order[i] != HTTP_CLASS_FRESH || !unread_bytes(c)))
                return c;
        }
    }
    return NULL;
}

static void evict(hone_http_server *s, hone_http_conn *c)
{
    s->stats.connections_evicted++;
    http_conn_close(c);
}

static int pressured(const hone_http_server *s)
{
    return (int64_t)s->nlive * 4 > (int64_t)s->limits.max_connections * 3;
}

/* Runs while under pressure: the oldest of each list first, so it stops at the first young one. */
static void on_sweep(uv_timer_t *t)
{
    hone_http_server *s = t->data;
    if (s->closing || !pressured(s)) {
        uv_timer_stop(t);
        return;
    }
    uint64_t now = uv_now(s->loop), limit = s->limits.busy_timeout_ms;
    hone_http_conn *c;
    static const int idle[] = {HTTP_CLASS_FRESH, HTTP_CLASS_IDLE};
    for (size_t i = 0; i < HONE_ARRAY_LEN(idle); i++)
        while ((c = s->classes[idle[i]].head) && now - c->klass_since_ms >= limit)
            evict(s, c);
    while ((c = s->classes[HTTP_CLASS_HEADERS].head) && now - c->klass_since_ms >= limit) {
        s->stats.connections_evicted++;
        http_conn_expire(c, (unsigned)limit); /* 408: it leaves the list (answer being written) */
        if (s->classes[HTTP_CLASS_HEADERS].head == c)
            http_conn_close(c);
    }
}

static void sweep_maybe_start(hone_http_server *s)
{
    if (!s->sweep_open || !pressured(s) || uv_is_active((uv_handle_t *)&s->sweep))
        return;
    uint64_t every = s->limits.busy_timeout_ms / 4;
    every = every < 10 ? 10 : every > 250 ? 250 : every;
    uv_timer_start(&s->sweep, on_sweep, every, every);
}

int http_fair_admit(hone_http_server *s, hone_http_conn *c, const struct sockaddr_storage *sa)
{
    const hone_http_limits *l = &s->limits;
    hone_http_conn *v;
    c->addr = addr_ref(s, sa);
    c->live = 1;
    s->nlive++;
    int over_addr = c->addr->nconns > l->max_per_address, verdict = 0;
    if (over_addr && (v = victim(s, c->addr))) {
        evict(s, v);
        over_addr = 0;
    }
    if (s->nlive > l->max_connections && (v = victim(s, NULL)))
        evict(s, v);
    if (s->nlive > l->max_connections || over_addr) {
        if (s->nreserve < l->reserve_connections) {
            c->reserve = 1;
            s->nreserve++;
            verdict = 1;
        } else {
            verdict = -1;
        }
    }
    sweep_maybe_start(s);
    return verdict;
}

void http_fair_make_room(hone_http_server *s)
{
    hone_http_conn *v = victim(s, NULL);
    if (v)
        evict(s, v);
}

/* ---- lifetime ------------------------------------------------------------------------------- */

static void on_sweep_close(uv_handle_t *h)
{
    hone_http_server *s = h->data;
    s->sweep_open = 0;
    http_server_maybe_done(s);
}

void http_fair_init(hone_http_server *s)
{
    uv_timer_init(s->loop, &s->sweep);
    s->sweep.data = s;
    s->sweep_open = 1;
}

void http_fair_close(hone_http_server *s)
{
    if (s->sweep_open && !uv_is_closing((uv_handle_t *)&s->sweep))
        uv_close((uv_handle_t *)&s->sweep, on_sweep_close);
}

void http_fair_free(hone_http_server *s)
{
    for (size_t i = 0; i < s->addr_buckets; i++) {
        http_peer_addr *a = s->addrs[i], *next;
        for (; a; a = next) {
            next = a->next;
            free(a);
        }
    }
    free(s->addrs);
    s->addrs = NULL;
    s->addr_buckets = s->naddrs = 0;
}
