#include "devices/net/net_steer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "lib/netrules/net_rules.h"
#include "lib/netrules/proxy_v2.h"

int net_steer_init(struct net_steer *s, const char *path, const struct tcp_term_config *tc,
		   const struct net_steer_io *io, struct err *e)
{
	struct sockaddr_un sa;
	const char *why;
	int r;

	memset(s, 0, sizeof(*s));
	if (strlen(path) >= sizeof(sa.sun_path) || !path[0])
		return err_set(e, EINVAL,
			       "--egress-proxy %s: not a Unix socket path (1 to %zu bytes)", path,
			       sizeof(sa.sun_path) - 1);
	if ((why = tcp_term_config_error(tc)))
		return err_set(e, EINVAL, "egress steering: %s", why);
	strcpy(s->path, path);
	s->io = *io;
	if ((r = tcp_term_init(&s->term, tc)) < 0)
		return err_set(e, -r, "egress steering: cannot allocate its TCP endpoint");
	s->conns = calloc(s->term.cfg.capacity, sizeof(*s->conns));
	s->bufs = calloc(s->term.cfg.capacity, 2 * NET_STEER_CHUNK);
	if (!s->conns || !s->bufs) {
		net_steer_free(s);
		return err_set(e, ENOMEM, "egress steering: out of memory");
	}
	for (uint32_t i = 0; i < s->term.cfg.capacity; i++) {
		s->conns[i].fd = -1;
		s->conns[i].up = s->bufs + (size_t)i * 2 * NET_STEER_CHUNK;
		s->conns[i].down = s->conns[i].up + NET_STEER_CHUNK;
	}
	return 0;
}

/* The socket closed and the slot free; the flow is no longer ours. */
static void conn_close(struct net_steer *s, struct net_steer_conn *c)
{
	uint8_t *up = c->up, *down = c->down;

	if (c->watched)
		s->io.unwatch(s->io.ctx, c->fd);
	close(c->fd);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->up = up;
	c->down = down;
	s->live--;
	s->st.closed++;
}

static void close_all(struct net_steer *s)
{
	for (uint32_t i = 0; s->conns && i < s->term.cfg.capacity; i++)
		if (s->conns[i].fd >= 0)
			conn_close(s, &s->conns[i]);
}

void net_steer_free(struct net_steer *s)
{
	close_all(s);
	tcp_term_free(&s->term);
	free(s->conns);
	free(s->bufs);
	s->conns = NULL;
	s->bufs = NULL;
}

void net_steer_reset(struct net_steer *s)
{
	close_all(s);
	tcp_term_clear(&s->term);
}

static struct net_steer_conn *conn_of(struct net_steer *s, const struct tcp_term_flow *f)
{
	struct net_steer_conn *c = &s->conns[f - s->term.flows];

	return c->fd >= 0 && c->flow == f ? c : NULL;
}

/* The guest gets a reset, the proxy an EOF. */
static void conn_fail(struct net_steer *s, struct net_steer_conn *c)
{
	tcp_term_abort(&s->term, c->flow);
	s->st.proxy_errors++;
	conn_close(s, c);
}

/* Watch for what the flow waits on now. false: the socket is gone (reset). */
static bool conn_watch(struct net_steer *s, struct net_steer_conn *c)
{
	uint32_t ev = 0;

	if (!c->proxy_eof && !c->down_blocked && c->down_off == c->down_len)
		ev |= EPOLLIN;
	if (c->up_blocked)
		ev |= EPOLLOUT;
	if (ev == c->watched)
		return true;
	if (!ev) {
		s->io.unwatch(s->io.ctx, c->fd);
	} else if (s->io.watch(s->io.ctx, c->fd, ev, !c->watched) < 0) {
		conn_fail(s, c);
		return false;
	}
	c->watched = ev;
	return true;
}

/* Both ways done: tcp_term finishes alone (FIN, or a reset for bytes
 * that came after), the socket closes. true when it did. */
static bool conn_done(struct net_steer *s, struct net_steer_conn *c, uint64_t now_ns)
{
	if (!c->up_shut || !c->proxy_eof || c->down_off != c->down_len)
		return false;
	tcp_term_release(&s->term, c->flow, now_ns);
	conn_close(s, c);
	return true;
}

/* Guest to proxy, while both sides take bytes. false: the conn is gone. */
static bool pump_up(struct net_steer *s, struct net_steer_conn *c, uint64_t now_ns)
{
	c->up_blocked = false;
	for (;;) {
		ssize_t w;

		if (c->up_off == c->up_len) {
			c->up_off = c->up_len = 0;
			if (c->up_shut)
				return true;
			c->up_len = (uint32_t)tcp_term_read(&s->term, c->flow, c->up,
							    NET_STEER_CHUNK, now_ns);
			if (!c->up_len) {
				if (!c->guest_eof)
					return true;
				/* Everything the guest sent is with the proxy. */
				shutdown(c->fd, SHUT_WR);
				c->up_shut = true;
				return !conn_done(s, c, now_ns);
			}
		}
		w = send(c->fd, c->up + c->up_off, c->up_len - c->up_off,
			 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
			c->up_blocked = errno == EAGAIN;
			return true;
		}
		if (w <= 0) { /* EPIPE: the proxy closed its end, and the guest still sends */
			conn_fail(s, c);
			return false;
		}
		if (c->hdr_left) {
			uint32_t h = (uint32_t)w < c->hdr_left ? (uint32_t)w : c->hdr_left;

			c->hdr_left -= h;
			s->st.bytes_up += (uint64_t)w - h;
		} else {
			s->st.bytes_up += (uint64_t)w;
		}
		c->up_off += (uint32_t)w;
	}
}

/* Proxy to guest, while both sides take bytes. false: the conn is gone. */
static bool pump_down(struct net_steer *s, struct net_steer_conn *c, uint64_t now_ns)
{
	c->down_blocked = false;
	for (;;) {
		size_t w;

		if (c->down_off == c->down_len) {
			ssize_t r;

			c->down_off = c->down_len = 0;
			if (c->proxy_eof)
				return !conn_done(s, c, now_ns);
			r = recv(c->fd, c->down, NET_STEER_CHUNK, MSG_DONTWAIT);
			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				return true;
			if (r < 0) {
				conn_fail(s, c);
				return false;
			}
			if (r == 0) {
				c->proxy_eof = true;
				tcp_term_shutdown(&s->term, c->flow, now_ns);
				return !conn_done(s, c, now_ns);
			}
			c->down_len = (uint32_t)r;
		}
		w = tcp_term_write(&s->term, c->flow, c->down + c->down_off,
				   c->down_len - c->down_off, now_ns);
		s->st.bytes_down += w;
		c->down_off += (uint32_t)w;
		if (c->down_off != c->down_len) {
			c->down_blocked = true; /* a WRITABLE event carries on */
			return true;
		}
	}
}

/* The PROXY v2 header that opens the flow with the proxy. */
static int header(struct net_steer *s, const struct conntrack_key *k, uint8_t *buf)
{
	struct proxy_v2 h = { .family = k->family == NET_AF4 ? AF_INET : AF_INET6,
			      .sport = k->gport,
			      .dport = k->rport };
	struct net_addr dst;
	char names[PROXY_V2_NAMES_MAX][NET_HOST_MAX + 1];
	size_t n;

	memcpy(h.src, k->guest, 16);
	memcpy(h.dst, k->remote, 16);
	net_addr_set(&dst, k->family, k->remote);
	n = s->io.names_of(s->io.ctx, &dst, names, PROXY_V2_NAMES_MAX);
	/* Every name the guest resolved to dst: it may use any of them. */
	for (size_t i = 0; i < n && i < PROXY_V2_NAMES_MAX; i++) {
		if (strnlen(names[i], sizeof(names[i])) > PROXY_V2_AUTHORITY_MAX)
			continue;
		if (!h.authority[0])
			strcpy(h.authority, names[i]);
		else
			strcpy(h.also[h.n_also++], names[i]);
	}
	return proxy_v2_encode(&h, buf, NET_STEER_CHUNK);
}

/*
 * tcp_term opened f: connect to the proxy. AF_UNIX connects at once or
 * fails (ENOENT, ECONNREFUSED, EAGAIN with a full backlog): every failure
 * is a reset for the guest, its connection refused as a closed port's.
 */
static void conn_open(struct net_steer *s, struct tcp_term_flow *f, uint64_t now_ns)
{
	struct net_steer_conn *c = &s->conns[f - s->term.flows];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, n;

	s->st.flows++;
	strcpy(sa.sun_path, s->path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		fd = -1;
	}
	n = fd >= 0 ? header(s, &f->key, c->up) : -EINVAL;
	if (fd >= 0 && (n < 0 || s->io.watch(s->io.ctx, fd, EPOLLIN, true) < 0)) {
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		tcp_term_abort(&s->term, f);
		s->st.connect_failed++;
		return;
	}
	c->fd = fd;
	c->flow = f;
	c->watched = EPOLLIN;
	c->up_off = 0;
	c->up_len = c->hdr_left = (uint32_t)n;
	s->live++;
	if (pump_up(s, c, now_ns))
		conn_watch(s, c);
}

/* tcp_term's events: the flows' progress on the guest's side. */
static void drain(struct net_steer *s, uint64_t now_ns)
{
	struct tcp_term_event ev;

	while (tcp_term_event(&s->term, &ev)) {
		struct net_steer_conn *c;
		bool live = true;

		if (ev.kind == TCP_TERM_EV_OPEN) {
			conn_open(s, ev.flow, now_ns);
			continue;
		}
		if (!(c = conn_of(s, ev.flow)))
			continue;
		switch (ev.kind) {
		case TCP_TERM_EV_EOF:
			c->guest_eof = true;
			/* fall through */
		case TCP_TERM_EV_READABLE:
			live = pump_up(s, c, now_ns);
			break;
		case TCP_TERM_EV_WRITABLE:
			live = pump_down(s, c, now_ns);
			break;
		case TCP_TERM_EV_CLOSED:
			if (ev.reset) { /* the guest reset it, or tcp_term timed it out */
				tcp_term_release(&s->term, c->flow, now_ns);
				conn_close(s, c);
				live = false;
			} else {
				live = pump_up(s, c, now_ns);
			}
			break;
		default:
			break;
		}
		if (live)
			conn_watch(s, c);
	}
}

void net_steer_input(struct net_steer *s, const uint8_t *frame, size_t len, uint64_t now_ns)
{
	struct pkt p;

	if (pkt_parse(frame, len, &p) == 0)
		tcp_term_input(&s->term, &p, now_ns);
	drain(s, now_ns);
}

size_t net_steer_next_frame(struct net_steer *s, uint8_t *frame, size_t cap, uint64_t now_ns)
{
	return tcp_term_next_frame(&s->term, frame, cap, now_ns);
}

bool net_steer_pending(const struct net_steer *s)
{
	return tcp_term_pending(&s->term);
}

void net_steer_ready(struct net_steer *s, int fd, uint32_t events, uint64_t now_ns)
{
	struct net_steer_conn *c = NULL;

	for (uint32_t i = 0; i < s->term.cfg.capacity; i++)
		if (s->conns[i].fd == fd) {
			c = &s->conns[i];
			break;
		}
	if (!c)
		return;
	if (events & EPOLLERR) {
		conn_fail(s, c);
		return;
	}
	if ((events & EPOLLOUT) && !pump_up(s, c, now_ns))
		return;
	if ((events & (EPOLLIN | EPOLLHUP)) && !c->down_blocked && !pump_down(s, c, now_ns))
		return;
	conn_watch(s, c);
	drain(s, now_ns);
}

void net_steer_tick(struct net_steer *s, uint64_t now_ns)
{
	tcp_term_expire(&s->term, now_ns);
	drain(s, now_ns);
}

size_t net_steer_flows(const struct net_steer *s, struct conntrack_key *out, size_t max)
{
	size_t n = 0;

	for (uint32_t i = 0; i < s->term.cfg.capacity && n < max; i++) {
		const struct tcp_term_flow *f = &s->term.flows[i];

		if (f->state >= TCP_TERM_ESTABLISHED && f->state <= TCP_TERM_LAST_ACK)
			out[n++] = f->key;
	}
	return n;
}

bool net_steer_holds(struct net_steer *s, const struct conntrack_key *k)
{
	return tcp_term_find(&s->term, k) != NULL;
}
