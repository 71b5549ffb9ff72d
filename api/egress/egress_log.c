/* egress_log: see egress_log.h. */
#include "api/egress/egress_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <jansson.h>

#include "api/egress/egress_dest.h"
#include "lib/base/fd_io.h"
#include "lib/base/json_text.h"

static json_t *str_or_null(const char *s)
{
	return s && s[0] ? json_string(s) : json_null();
}

json_t *egress_log_endpoint(const struct proxy_v2 *h, bool src)
{
	char a[NET_ADDR_STRLEN], out[NET_ADDR_STRLEN + 16];
	struct net_addr na;

	if (!h)
		return json_null();
	if (src)
		net_addr_set(&na, h->family == AF_INET6 ? NET_AF6 : NET_AF4, h->src);
	else
		egress_dest_of(h, &na);
	net_addr_format(&na, a, sizeof(a));
	snprintf(out, sizeof(out), h->family == AF_INET6 ? "[%s]:%u" : "%s:%u", a,
		 src ? h->sport : h->dport);
	return json_string(out);
}

void egress_log_write(struct egress_logger *g, const struct egress_log *l)
{
	char when[32] = "";
	time_t t = time(NULL);
	struct tm tm;
	json_t *o = json_object(), *inj = json_array();
	char *text;

	if (!o || !inj)
		goto out;
	if (gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	for (size_t i = 0; i < l->n_injected; i++)
		json_array_append_new(inj, json_string(l->injected[i]));
	json_object_set_new(o, "time", json_string(when));
	json_object_set_new(o, "src", egress_log_endpoint(l->hdr, true));
	json_object_set_new(o, "dst", egress_log_endpoint(l->hdr, false));
	json_object_set_new(o, "name", str_or_null(l->name));
	json_object_set_new(o, "sni", str_or_null(l->sni));
	json_object_set_new(o, "host", str_or_null(l->host));
	json_object_set_new(o, "method", str_or_null(l->method));
	json_object_set_new(o, "path", str_or_null(l->path));
	json_object_set_new(o, "decision", json_string(l->decision));
	json_object_set_new(o, "rule",
			    l->rule == SIZE_MAX ? json_null() : json_integer((json_int_t)l->rule));
	json_object_set_new(o, "reason", json_string(l->reason ? l->reason : ""));
	json_object_set_new(o, "policy", str_or_null(l->policy));
	json_object_set_new(o, "bytes_up", json_integer((json_int_t)l->up));
	json_object_set_new(o, "bytes_down", json_integer((json_int_t)l->down));
	json_object_set_new(o, "injected", inj);
	inj = NULL;
	text = json_text(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (text) {
		size_t n = strlen(text);

		text[n] = '\n';
		pthread_mutex_lock(&g->lock);
		fd_io_write_all(g->fd, text, n + 1);
		pthread_mutex_unlock(&g->lock);
		free(text);
	}
out:
	json_decref(inj);
	json_decref(o);
}
