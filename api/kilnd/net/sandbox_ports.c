/*
 * A sandbox's port mappings (sandbox.h): the list lives in struct sandbox
 * under reg.mu; the listeners and relays are port_fwd's. A mapping is
 * added only while the sandbox runs and its VMM has not ended, checked
 * under the same lock on_vmm_exit takes the list with, so no mapping can
 * outlive the boot it was made for.
 */
#include <stdlib.h>
#include <string.h>

#include "api/kilnd/registry/sandbox_impl.h"

/* The live mappings as POST .../ports bodies, with their host ports or
 * (a checkpoint's) without; NULL when out of memory. Under reg.mu. */
static json_t *ports_bodies_locked(struct sandbox *sb, bool host_port)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < sb->nports; i++) {
		json_t *v = port_fwd_view(sb->ports[i]), *o = NULL;

		if (v)
			o = json_pack("{s:O,s:O}", "guest_port", json_object_get(v, "guest_port"),
				      "target", json_object_get(v, "target"));
		if (o && host_port &&
		    json_object_set(o, "host_port", json_object_get(v, "host_port"))) {
			json_decref(o);
			o = NULL;
		}
		if (o && json_object_get(v, "guest_address"))
			json_object_set(o, "guest_address", json_object_get(v, "guest_address"));
		json_decref(v);
		if (!o || json_array_append_new(a, o)) {
			json_decref(a);
			a = NULL;
		}
	}
	return a;
}

/* rec.ports from the live mappings (with their host ports, for a
 * restarted kilnd or a wake to listen again), then meta.json. Under reg.mu. */
static void ports_persist_locked(struct sandbox *sb)
{
	json_t *a = ports_bodies_locked(sb, true);

	if (!a)
		return; /* out of memory: the record keeps the last list it had */
	json_decref(sb->rec.ports);
	sb->rec.ports = a;
	sandbox_persist_locked(sb);
}

/* Listen on each mapping of list (POST .../ports bodies; taken): one that
 * cannot be made (its host port is taken now) is logged and dropped. Then
 * persist. Not under reg.mu. */
static void ports_open(struct sandbox *sb, json_t *list)
{
	struct kilnd *d = sb->d;
	struct port_spec spec;
	struct port_fwd *f;
	struct api_err e;
	json_t *p;
	size_t i;

	json_array_foreach(list, i, p)
	{
		bool kept = false;

		/* Checked at load already; the spec points into p, alive until the end. */
		if (port_spec_parse(p, &spec, &e) || port_fwd_open(sb->vsock, &spec, &f, &e)) {
			kilnd_log("sandbox %s: port mapping %zu not listened again: %s", sb->rec.id,
				  i, e.msg);
			continue;
		}
		kilnd_lock(d);
		if (sb->proc && !sb->vmm_exited && sb->nports < SANDBOX_PORTS_MAX) {
			sb->ports[sb->nports++] = f;
			kept = true;
		}
		kilnd_unlock(d);
		if (!kept)
			port_fwd_close(f);
		else
			kilnd_log("sandbox %s: 127.0.0.1:%u forwards to guest %s port %u%s",
				  sb->rec.id, (unsigned)port_fwd_host_port(f),
				  port_target_name(spec.target), (unsigned)spec.guest_port,
				  spec.host_port ? " again" : "");
	}
	json_decref(list);
	kilnd_lock(d);
	ports_persist_locked(sb);
	kilnd_unlock(d);
}

void sandbox_ports_reopen(struct sandbox *sb)
{
	json_t *list;

	kilnd_lock(sb->d);
	/* Only when none listens (a reattach, or this boot resumes a snapshot). */
	list = sb->rec.ports && !sb->nports ? json_deep_copy(sb->rec.ports) : NULL;
	kilnd_unlock(sb->d);
	if (json_array_size(list))
		ports_open(sb, list);
	else
		json_decref(list);
}

json_t *sandbox_ports_guest_side(struct sandbox *sb)
{
	json_t *a;

	kilnd_lock(sb->d);
	a = ports_bodies_locked(sb, false);
	kilnd_unlock(sb->d);
	return a;
}

void sandbox_ports_open_new(struct sandbox *sb, const json_t *guest_side)
{
	json_t *list = json_deep_copy(guest_side);

	if (json_array_size(list))
		ports_open(sb, list);
	else
		json_decref(list);
}

int sandbox_port_add(struct sandbox *sb, const struct port_spec *spec, json_t **view,
		     struct api_err *e)
{
	struct kilnd *d = sb->d;
	struct port_fwd *f;
	json_t *env = NULL;
	kiln_agent *a;
	bool ok;

	*view = NULL;
	/* Running, or 409: the same rule as exec and files (the mapping
	 * makes its own client below). */
	if (sandbox_agent_new(sb, &a, &env, e))
		return -1;
	kiln_agent_free(a);
	json_decref(env);
	kilnd_lock(d);
	ok = sb->nports < SANDBOX_PORTS_MAX;
	kilnd_unlock(d);
	if (!ok) {
		api_err_set(e, API_E_LIMIT_REACHED,
			    "sandbox %s already has %d port mappings; remove one first", sb->rec.id,
			    SANDBOX_PORTS_MAX);
		return -1;
	}
	if (port_fwd_open(sb->vsock, spec, &f, e))
		return -1;
	kilnd_lock(d);
	if (sb->rec.state != SANDBOX_RUNNING || sb->vmm_exited) {
		api_err_set(e, API_E_WRONG_STATE,
			    "sandbox %s stopped while the port mapping was made", sb->rec.id);
		ok = false;
	} else if (sb->nports >= SANDBOX_PORTS_MAX) {
		api_err_set(e, API_E_LIMIT_REACHED,
			    "sandbox %s already has %d port mappings; remove one first", sb->rec.id,
			    SANDBOX_PORTS_MAX);
		ok = false;
	} else {
		sb->ports[sb->nports++] = f;
		*view = port_fwd_view(f);
		ok = true;
		ports_persist_locked(sb);
	}
	kilnd_unlock(d);
	if (!ok) {
		port_fwd_close(f);
		return -1;
	}
	kilnd_log("sandbox %s: 127.0.0.1:%u forwards to guest %s port %u", sb->rec.id,
		  (unsigned)port_fwd_host_port(f), port_target_name(spec->target),
		  (unsigned)spec->guest_port);
	return 0;
}

static size_t ports_count(const struct sandbox *sb)
{
	return sb->nports;
}

static json_t *port_view(struct sandbox *sb, size_t i)
{
	return port_fwd_view(sb->ports[i]);
}

json_t *sandbox_port_list(struct sandbox *sb)
{
	return sandbox_list_view(sb, "ports", ports_count, port_view);
}

int sandbox_port_remove(struct sandbox *sb, uint16_t host_port, struct api_err *e)
{
	struct kilnd *d = sb->d;
	struct port_fwd *f = NULL;

	kilnd_lock(d);
	for (size_t i = 0; i < sb->nports; i++) {
		if (port_fwd_host_port(sb->ports[i]) == host_port) {
			f = sb->ports[i];
			sb->ports[i] = sb->ports[--sb->nports];
			ports_persist_locked(sb);
			break;
		}
	}
	kilnd_unlock(d);
	if (!f) {
		api_err_set(e, API_E_NOT_FOUND,
			    "sandbox %s has no port mapping on host port %u (GET .../ports lists them)",
			    sb->rec.id, (unsigned)host_port);
		return -1;
	}
	/* Outside the lock: closing joins the listener thread. */
	port_fwd_close(f);
	kilnd_log("sandbox %s: port %u no longer forwarded", sb->rec.id, (unsigned)host_port);
	return 0;
}

void sandbox_ports_close(struct sandbox *sb)
{
	struct kilnd *d = sb->d;
	struct port_fwd *v[SANDBOX_PORTS_MAX];
	size_t n;

	kilnd_lock(d);
	n = sb->nports;
	memcpy(v, sb->ports, n * sizeof(v[0]));
	sb->nports = 0;
	kilnd_unlock(d);
	for (size_t i = 0; i < n; i++)
		port_fwd_close(v[i]);
}
