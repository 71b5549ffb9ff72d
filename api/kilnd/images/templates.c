/* templates: see templates.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/kilnd/core/firewall_spec.h"
#include "api/kilnd/core/json_fields.h"
#include "api/kilnd/core/names.h"
#include "api/kilnd/images/images.h"
#include "api/kilnd/registry/sandbox_impl.h"
#include "api/kilnd/supervision/sandbox_jail.h"
#include "api/kilnd/images/templates.h"
#include "lib/base/file_copy.h"
#include "lib/base/json.h"
#include "lib/base/json_text.h"
#include "vmm/snapshot/snapshot_io.h"

/* A template record is small; anything bigger is not ours. */
#define TEMPLATE_RECORD_MAX (1u << 20)

/* ---- records ---- */

static int tpath(const struct kilnd *d, const char *name, char *out, size_t cap)
{
	return sandbox_pathf(out, cap, "%s/templates%s%s%s", d->cfg.state_dir, name ? "/" : "",
			     name ? name : "", name ? ".json" : "");
}

void templates_init(struct kilnd *d)
{
	static const char *const files[] = { "context.tar.gz", "copy.tar" };
	char dir[PATH_MAX], p[PATH_MAX];
	struct dirent *de;
	DIR *dh;

	if (tpath(d, NULL, dir, sizeof(dir)) || !(dh = opendir(dir)))
		return;
	while ((de = readdir(dh))) {
		if (strncmp(de->d_name, ".build-", 7) != 0 ||
		    sandbox_pathf(p, sizeof(p), "%s/%s", dir, de->d_name))
			continue;
		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
			char f[PATH_MAX];

			if (sandbox_pathf(f, sizeof(f), "%s/%s", p, files[i]) == 0)
				unlink(f);
		}
		if (rmdir(p) == 0)
			kilnd_log("removed %s: the work directory of a template build that kilnd's end cut short",
				  p);
		else
			kilnd_log("cannot remove %s: %s", p, strerror(errno));
	}
	closedir(dh);
}

static void not_found(struct api_err *e, const char *name)
{
	api_err_set(e, API_E_NOT_FOUND, "no template '%.64s' (GET /v1/templates lists them)", name);
}

json_t *template_load(struct kilnd *d, const char *name, struct api_err *e)
{
	char p[PATH_MAX];
	json_error_t je;
	json_t *rec;

	if (!image_name_valid(name)) {
		api_err_set(e, API_E_BAD_FIELD,
			    "template name '%.80s' must be 1..64 of [A-Za-z0-9._-], first a letter or digit",
			    name);
		return NULL;
	}
	if (tpath(d, name, p, sizeof(p))) {
		api_err_set(e, API_E_INTERNAL, "template %s: path too long", name);
		return NULL;
	}
	rec = json_strict_load_file(p, &je);
	if (!rec) {
		if (access(p, F_OK) == 0)
			api_err_set(e, API_E_INTERNAL, "template %s: %s is unreadable: %s", name, p,
				    je.text);
		else
			not_found(e, name);
		return NULL;
	}
	if (!json_is_object(rec) || !json_is_string(json_object_get(rec, "sandbox")) ||
	    !sandbox_id_valid(json_string_value(json_object_get(rec, "sandbox")))) {
		json_decref(rec);
		api_err_set(e, API_E_INTERNAL, "template %s: %s is not a template record", name, p);
		return NULL;
	}
	return rec;
}

static const char *rec_str(const json_t *rec, const char *key)
{
	return json_string_value(json_object_get(rec, key));
}

/* The hidden sandbox that holds the template's snapshots, with a
 * reference (sandbox_put), or NULL with e when it is gone. */
static struct sandbox *template_sandbox(struct kilnd *d, const json_t *rec, struct api_err *e)
{
	struct sandbox *sb;

	kilnd_lock(d);
	sb = sandbox_find_locked(d, rec_str(rec, "sandbox"));
	if (sb)
		sb->refs++;
	kilnd_unlock(d);
	if (!sb)
		api_err_set(e, API_E_INTERNAL,
			    "template %s: its sandbox %s is gone: build it again",
			    rec_str(rec, "name"), rec_str(rec, "sandbox"));
	return sb;
}

/* The first sandbox created from the template, under reg.mu, or NULL. */
static const char *template_user_locked(struct kilnd *d, const char *name)
{
	for (size_t i = 0; i < d->reg.n; i++)
		if (strcmp(d->reg.v[i]->rec.tmpl, name) == 0 &&
		    d->reg.v[i]->rec.state != SANDBOX_DELETING)
			return d->reg.v[i]->rec.id;
	return NULL;
}

static size_t template_users_locked(struct kilnd *d, const char *name)
{
	size_t n = 0;

	for (size_t i = 0; i < d->reg.n; i++)
		n += strcmp(d->reg.v[i]->rec.tmpl, name) == 0 &&
			d->reg.v[i]->rec.state != SANDBOX_DELETING;
	return n;
}

static bool building_locked(struct kilnd *d, const char *name)
{
	for (size_t i = 0; i < KILND_TEMPLATE_BUILDS_MAX; i++)
		if (strcmp(d->tmpl_building[i], name) == 0)
			return true;
	return false;
}

/*
 * Under reg.mu: whether from (a hidden template sandbox) is still the
 * sandbox of a live template record, so a restore or copy from it may
 * start. A delete or a rebuild decides under the same lock, before it
 * unlinks or replaces the record, whether a reader holds the sandbox
 * (cp_readers): so either the reader sees the record gone (and refuses)
 * or the delete sees the reader (and answers 409).
 */
static bool template_live_locked(struct kilnd *d, const struct sandbox *from, struct api_err *e)
{
	struct api_err le;
	json_t *rec;
	bool live;

	if (!from->rec.tmpl_build[0])
		return true;
	rec = template_load(d, from->rec.tmpl_build, &le);
	live = rec && rec_str(rec, "sandbox") && strcmp(rec_str(rec, "sandbox"), from->rec.id) == 0;
	json_decref(rec);
	if (!live)
		api_err_set(e, API_E_NOT_FOUND,
			    "template '%s' was deleted or rebuilt meanwhile: retry (GET /v1/templates)",
			    from->rec.tmpl_build);
	return live;
}

/* Under reg.mu: 409 busy when a create or build reads the hidden sandbox id. */
static int template_readers_locked(struct kilnd *d, const char *name, const char *id,
				   const char *what, struct api_err *e)
{
	struct sandbox *sb = sandbox_find_locked(d, id);

	if (!sb || !sb->cp_readers)
		return 0;
	api_err_set(e, API_E_BUSY,
		    "template '%s': a sandbox is being created from it or a build reads it right now; %s once that ended",
		    name, what);
	return -1;
}

uint64_t template_sandbox_bytes(struct kilnd *d, const char *id)
{
	struct sandbox *sb;
	uint64_t n = 0;
	size_t i;
	json_t *cp;

	kilnd_lock(d);
	sb = sandbox_find_locked(d, id);
	if (sb)
		json_array_foreach(sb->rec.checkpoints, i, cp)
			n += (uint64_t)json_integer_value(json_object_get(cp, "size_bytes"));
	kilnd_unlock(d);
	return n;
}

/* The API's template object: the record plus size_bytes, cache_entries and in_use. */
static json_t *template_view(struct kilnd *d, json_t *rec)
{
	json_t *v = json_deep_copy(rec), *steps = json_object_get(rec, "steps"), *s;
	size_t i, cached = 0, users;

	if (!v)
		return NULL;
	json_array_foreach(steps, i, s) cached += json_is_string(json_object_get(s, "checkpoint"));
	kilnd_lock(d);
	users = template_users_locked(d, rec_str(rec, "name") ? rec_str(rec, "name") : "");
	kilnd_unlock(d);
	if (json_object_set_new(v, "size_bytes",
				json_integer(
					(json_int_t)template_sandbox_bytes(d,
									   rec_str(rec,
										   "sandbox")))) ||
	    json_object_set_new(v, "cache_entries", json_integer((json_int_t)cached)) ||
	    json_object_set_new(v, "in_use", json_integer((json_int_t)users))) {
		json_decref(v);
		return NULL;
	}
	return v;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

json_t *templates_list(struct kilnd *d)
{
	json_t *arr = json_array();
	char dir[PATH_MAX];
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *dh;

	if (!arr || tpath(d, NULL, dir, sizeof(dir)) || !(dh = opendir(dir)))
		return arr ? json_pack("{s:o}", "templates", arr) : NULL;
	/* every record: the list has no cap of its own (a name is 64 bytes) */
	while ((de = readdir(dh))) {
		size_t l = strlen(de->d_name);

		if (l <= 5 || strcmp(de->d_name + l - 5, ".json") != 0)
			continue;
		if (n == cap) {
			char **nv = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof(*names));

			if (!nv)
				break;
			names = nv;
		}
		if ((names[n] = strndup(de->d_name, l - 5)))
			n++;
	}
	closedir(dh);
	/* names is NULL when there is none: qsort(NULL, 0) is undefined (UBSan) */
	if (n > 1)
		qsort(names, n, sizeof(names[0]), name_cmp);
	for (size_t i = 0; i < n; i++) {
		struct api_err e;
		json_t *rec = image_name_valid(names[i]) ? template_load(d, names[i], &e) : NULL;

		if (rec) {
			json_t *v = template_view(d, rec);

			/* The list leaves the build file out; GET .../{name} has it. */
			json_object_del(v, "buildfile");
			json_object_del(v, "steps");
			if (v)
				json_array_append_new(arr, v);
			json_decref(rec);
		}
		free(names[i]);
	}
	free(names);
	return json_pack("{s:o}", "templates", arr);
}

int templates_get(struct kilnd *d, const char *name, json_t **out, struct api_err *e)
{
	json_t *rec = template_load(d, name, e);

	if (!rec)
		return -1;
	*out = template_view(d, rec);
	json_decref(rec);
	if (!*out) {
		api_err_set(e, API_E_INTERNAL, "template: out of memory");
		return -1;
	}
	return 0;
}

/* Remove the hidden sandbox with this id (a template's), if it exists. */
static int remove_template_sandbox(struct kilnd *d, const char *id, struct api_err *e)
{
	struct sandbox *sb;

	sb = sandbox_find_ref(d, id);
	if (!sb)
		return 0;
	if (sandbox_delete(sb, e)) {
		sandbox_put(sb);
		return -1;
	}
	sandbox_put(sb);
	return 0;
}

/* Under reg.mu: 409 busy while a build of name runs (the first one
 * included: no record yet, but the name is taken). */
static int template_building_locked(struct kilnd *d, const char *name, struct api_err *e)
{
	if (!building_locked(d, name))
		return 0;
	api_err_set(e, API_E_BUSY, "template '%s' is being built; delete it once the build ended",
		    name);
	return -1;
}

int templates_delete(struct kilnd *d, const char *name, struct api_err *e)
{
	char p[PATH_MAX], id[SANDBOX_ID_LEN + 1];
	json_t *rec = template_load(d, name, e);
	const char *user;

	if (!rec) {
		if (e->code == API_E_NOT_FOUND) {
			kilnd_lock(d);
			template_building_locked(d, name, e);
			kilnd_unlock(d);
		}
		return -1;
	}
	snprintf(id, sizeof(id), "%s", rec_str(rec, "sandbox"));
	json_decref(rec);
	if (tpath(d, name, p, sizeof(p))) {
		api_err_set(e, API_E_INTERNAL, "template %s: path too long", name);
		return -1;
	}
	kilnd_lock(d);
	if (template_building_locked(d, name, e)) {
		kilnd_unlock(d);
		return -1;
	}
	user = template_user_locked(d, name);
	if (user) {
		api_err_set(e, API_E_IN_USE,
			    "template '%s' is in use by sandbox %s (%zu in all; their exec defaults come from it): delete them first",
			    name, user, template_users_locked(d, name));
		kilnd_unlock(d);
		return -1;
	}
	if (template_readers_locked(d, name, id, "retry the delete", e)) {
		kilnd_unlock(d);
		return -1;
	}
	/* The record goes first, under the lock: no create finds it after
	 * (one that loaded it before re-checks it here, template_live_locked). */
	if (unlink(p) < 0 && errno != ENOENT) {
		api_err_set(e, API_E_IO_ERROR, "template '%s': remove %s: %s", name, p,
			    strerror(errno));
		kilnd_unlock(d);
		return -1;
	}
	kilnd_unlock(d);
	if (remove_template_sandbox(d, id, e))
		kilnd_log("template %s: its sandbox %s stays (%s); kilnd removes it with the next delete of that name",
			  name, id, e->msg);
	return 0;
}

/* ---- builds ---- */

int template_build_begin(struct kilnd *d, const char *name, struct api_err *e)
{
	size_t free_slot = KILND_TEMPLATE_BUILDS_MAX;

	kilnd_lock(d);
	if (building_locked(d, name)) {
		kilnd_unlock(d);
		api_err_set(e, API_E_BUSY,
			    "template '%s' is being built already; wait for that build to end",
			    name);
		return -1;
	}
	for (size_t i = 0; i < KILND_TEMPLATE_BUILDS_MAX && free_slot == KILND_TEMPLATE_BUILDS_MAX;
	     i++)
		if (!d->tmpl_building[i][0])
			free_slot = i;
	if (free_slot == KILND_TEMPLATE_BUILDS_MAX) {
		kilnd_unlock(d);
		api_err_set(e, API_E_LIMIT_REACHED,
			    "%d template builds are under way; retry once one ended",
			    KILND_TEMPLATE_BUILDS_MAX);
		return -1;
	}
	if (template_user_locked(d, name)) {
		api_err_set(e, API_E_IN_USE,
			    "template '%s' is in use by sandbox %s: a rebuild would replace it under them; build it under another name or delete them first",
			    name, template_user_locked(d, name));
		kilnd_unlock(d);
		return -1;
	}
	snprintf(d->tmpl_building[free_slot], sizeof(d->tmpl_building[0]), "%s", name);
	kilnd_unlock(d);
	return 0;
}

void template_build_end(struct kilnd *d, const char *name)
{
	kilnd_lock(d);
	for (size_t i = 0; i < KILND_TEMPLATE_BUILDS_MAX; i++)
		if (strcmp(d->tmpl_building[i], name) == 0)
			d->tmpl_building[i][0] = '\0';
	kilnd_unlock(d);
}

int templates_cache_find(struct kilnd *d, char (*keys)[BUILDFILE_KEY_LEN + 1], size_t n,
			 size_t *hit, char *id, char *cp)
{
	json_t *all = templates_list(d), *t;
	bool found = false;
	size_t i;

	*hit = 0;
	json_array_foreach(json_object_get(all, "templates"), i, t)
	{
		struct api_err e;
		json_t *rec = template_load(d, rec_str(t, "name") ? rec_str(t, "name") : "", &e),
		       *s;
		size_t k;

		if (!rec)
			continue;
		json_array_foreach(json_object_get(rec, "steps"), k, s)
		{
			const char *key = rec_str(s, "key"), *c = rec_str(s, "checkpoint");

			if (!key || !c)
				continue;
			for (size_t j = n; j-- > 0;) {
				if ((!found || j > *hit) && strcmp(keys[j], key) == 0) {
					struct sandbox *sb;

					kilnd_lock(d);
					sb = sandbox_find_locked(d, rec_str(rec, "sandbox"));
					if (sb && checkpoint_find(sb->rec.checkpoints, c, NULL)) {
						found = true;
						*hit = j;
						snprintf(id, SANDBOX_ID_LEN + 1, "%s", sb->rec.id);
						snprintf(cp, CHECKPOINT_NAME_MAX + 1, "%s", c);
					}
					kilnd_unlock(d);
					break;
				}
			}
		}
		json_decref(rec);
	}
	json_decref(all);
	return found ? 0 : -1;
}

/* Fork a new sandbox (of owner's, spec built from body over the source's)
 * from checkpoint cp of sandbox from; boot.from names from_label. */
static struct sandbox *fork_from(struct kilnd *d, struct sandbox *from, const char *cp,
				 const json_t *body, uid_t owner, const char *tmpl_build,
				 const char *tmpl, json_t **view, struct api_err *e)
{
	char dir[PATH_MAX], ref[CHECKPOINT_REF_MAX + 1], image[PATH_MAX];
	struct boot_src src = { .restore_dir = dir, .from = "checkpoint", .checkpoint = ref };
	struct sandbox_spec spec;
	struct sandbox *sb;
	bool hostname_given, found;
	int r;

	snprintf(ref, sizeof(ref), "%s/%s", from->rec.id, cp);
	if (sandbox_checkpoint_dir(from, cp, dir, sizeof(dir))) {
		api_err_set(e, API_E_INTERNAL, "template: checkpoint path too long");
		return NULL;
	}
	if (fork_spec_parse(body, &from->rec.spec, &d->cfg.limits, &spec, &hostname_given, e))
		return NULL;
	kilnd_lock(d);
	sandbox_wait_unmerging_locked(from);
	found = from->rec.state != SANDBOX_DELETING &&
		checkpoint_find(from->rec.checkpoints, cp, NULL);
	if (!found)
		api_err_set(e, API_E_CHECKPOINT_NOT_FOUND,
			    "template: sandbox %s has no checkpoint '%s' any more", from->rec.id,
			    cp);
	else if (!(found = template_live_locked(d, from, e)))
		;
	else
		from->cp_readers++;
	kilnd_unlock(d);
	if (!found) {
		sandbox_spec_free(&spec);
		return NULL;
	}
	snprintf(image, sizeof(image), "%s", from->rec.image_path);
	sb = sandbox_create_entry(d, owner, &spec, image, !hostname_given, tmpl_build != NULL, e);
	r = -1;
	if (sb) {
		kilnd_lock(d);
		if (tmpl_build) {
			sb->rec.pooled = false;
			snprintf(sb->rec.tmpl_build, sizeof(sb->rec.tmpl_build), "%s", tmpl_build);
		}
		if (tmpl)
			snprintf(sb->rec.tmpl, sizeof(sb->rec.tmpl), "%s", tmpl);
		sb->refs += 2; /* create_finish drops one; the caller keeps one */
		kilnd_unlock(d);
		src.hostname = sb->rec.spec.hostname;
		kilnd_log("sandbox %s: forking checkpoint %s%s%s", sb->rec.id, ref,
			  tmpl ? " for template " : "", tmpl ? tmpl : "");
		r = sandbox_create_finish(sb, &src, view, e);
		sandbox_put(sb);
		if (r) {
			sandbox_put(sb);
			sb = NULL;
		}
	}
	kilnd_lock(d);
	from->cp_readers--;
	pthread_cond_broadcast(&from->cv);
	kilnd_unlock(d);
	return sb;
}

const char *template_sandbox_id(const struct sandbox *sb)
{
	return sb->rec.id;
}

struct sandbox *template_sandbox_start(struct kilnd *d, const char *name, const json_t *body,
				       const char *from_id, const char *from_cp, struct api_err *e)
{
	struct sandbox_spec spec;
	char image[PATH_MAX];
	struct sandbox *sb, *from;
	json_t *view = NULL;

	if (from_id) {
		json_t *fb = json_object();

		kilnd_lock(d);
		from = sandbox_find_locked(d, from_id);
		if (from)
			from->refs++;
		kilnd_unlock(d);
		if (!from) {
			json_decref(fb);
			api_err_set(e, API_E_NOT_FOUND, "template: its base sandbox %s is gone",
				    from_id);
			return NULL;
		}
		sb = fb ? fork_from(d, from, from_cp, fb, 0, name, NULL, &view, e) : NULL;
		if (!fb)
			api_err_set(e, API_E_INTERNAL, "template: out of memory");
		json_decref(fb);
		sandbox_put(from);
		json_decref(view);
		return sb;
	}
	if (sandbox_spec_parse(body, &d->cfg.limits, &spec, e))
		return NULL;
	if (images_find(d, spec.image, image, e) ||
	    images_check_disk(spec.image, image, spec.disk_mib, e)) {
		sandbox_spec_free(&spec);
		return NULL;
	}
	sb = sandbox_create_entry(d, 0, &spec, image, true, true, e);
	if (!sb)
		return NULL;
	kilnd_lock(d);
	sb->rec.pooled = false;
	snprintf(sb->rec.tmpl_build, sizeof(sb->rec.tmpl_build), "%s", name);
	sb->refs++; /* create_finish drops the caller's; this one is returned */
	kilnd_unlock(d);
	if (sandbox_create_finish(sb, NULL, &view, e)) {
		sandbox_put(sb);
		return NULL;
	}
	json_decref(view);
	return sb;
}

static int save_record(struct kilnd *d, json_t *rec, struct api_err *e)
{
	char dir[PATH_MAX], p[PATH_MAX], tmp[PATH_MAX + 8];
	const char *name = rec_str(rec, "name");

	if (tpath(d, NULL, dir, sizeof(dir)) || tpath(d, name, p, sizeof(p)) ||
	    sandbox_pathf(tmp, sizeof(tmp), "%s.tmp", p)) {
		api_err_set(e, API_E_INTERNAL, "template %s: path too long", name);
		return -1;
	}
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		api_err_set(e, API_E_IO_ERROR, "template %s: cannot create %s: %s", name, dir,
			    strerror(errno));
		return -1;
	}
	/* Written whole then renamed: a reader sees the old record or the new. */
	if (json_text_file(rec, tmp, JSON_COMPACT) < 0 || rename(tmp, p) < 0) {
		api_err_set(e, API_E_IO_ERROR, "template %s: cannot write %s: %s", name, p,
			    strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

int template_commit(struct kilnd *d, json_t *rec, struct api_err *e)
{
	const char *name = rec_str(rec, "name");
	char old_id[SANDBOX_ID_LEN + 1] = "";
	struct api_err oe;
	json_t *old = template_load(d, name, &oe);
	const char *user;
	int r;

	if (old && rec_str(old, "sandbox"))
		snprintf(old_id, sizeof(old_id), "%s", rec_str(old, "sandbox"));
	json_decref(old);
	kilnd_lock(d);
	user = template_user_locked(d, name);
	if (user) {
		api_err_set(e, API_E_IN_USE,
			    "template '%s' gained sandbox %s during the build: build it under another name",
			    name, user);
		kilnd_unlock(d);
		return -1;
	}
	if (old_id[0] && strcmp(old_id, rec_str(rec, "sandbox")) &&
	    template_readers_locked(d, name, old_id, "build it again", e)) {
		kilnd_unlock(d);
		return -1;
	}
	r = save_record(d, rec, e);
	kilnd_unlock(d);
	if (r)
		return -1;
	if (old_id[0] && strcmp(old_id, rec_str(rec, "sandbox")) &&
	    remove_template_sandbox(d, old_id, &oe))
		kilnd_log("template %s: the replaced template's sandbox %s stays: %s", name, old_id,
			  oe.msg);
	return 0;
}

/* ---- sandboxes from a template ---- */

bool template_requested(const json_t *body)
{
	return json_is_object(body) && json_object_get(body, "template") != NULL;
}

json_t *template_defaults(struct kilnd *d, const char *name)
{
	struct api_err e;
	json_t *rec = template_load(d, name, &e), *def;

	if (!rec)
		return NULL;
	def = json_incref(json_object_get(rec, "defaults"));
	json_decref(rec);
	return def;
}

/* What kiln-vmm's overlay of a disk (devices/blk/blk_backend.c) adds to
 * the disk's size: a header, an allocation bitmap of at most 64 MiB, the
 * size rounded up to a block of at most 1 MiB. A disk0 larger than its
 * disk plus this is not the template's disk. */
#define TEMPLATE_DISK_OVERHEAD (80ull << 20)

/* Where the ready checkpoint's copy of the template's overlay is, beneath vm/. */
#define TEMPLATE_DISK_FILE "checkpoints/" TEMPLATE_READY_CHECKPOINT "/disk0"

/* The template's disk: disk_mib, else its image's size. 0 when unknown. */
static uint64_t template_disk_bytes(const struct sandbox *from)
{
	struct stat st;

	if (from->rec.spec.disk_mib)
		return (uint64_t)from->rec.spec.disk_mib << 20;
	return stat(from->rec.image_path, &st) == 0 && st.st_size > 0 ? (uint64_t)st.st_size : 0;
}

/*
 * Copy the template's disk into a new file at ovl. The build's jailed
 * kiln-vmm wrote the checkpoint directory, so it may have planted a link
 * or a fifo there: the file is opened with sandbox_jail_open (nothing
 * followed, nothing waited on, a regular file only) and must be no
 * larger than an overlay of the template's disk, before and after the
 * copy. 0, or -errno with e.
 */
static int copy_template_disk(const struct sandbox *from, const char *ovl, struct err *e)
{
	uint64_t disk = template_disk_bytes(from), max = disk + TEMPLATE_DISK_OVERHEAD;
	struct stat st;
	int in, out, r;

	if (!disk)
		return err_set(e, ENOENT,
			       "its image %s is gone or empty, so its disk's size is unknown",
			       from->rec.image_path);
	in = sandbox_jail_open(from, TEMPLATE_DISK_FILE, OPEN_BENEATH_FILE, &st, e);
	if (in < 0)
		return in;
	if ((uint64_t)st.st_size > max) {
		r = err_set(e, EFBIG,
			    "%s/vm/%s is %lld bytes, more than an overlay of its disk can be (%llu bytes at most): refused",
			    from->dir, TEMPLATE_DISK_FILE, (long long)st.st_size,
			    (unsigned long long)max);
		close(in);
		return r;
	}
	out = open(ovl, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (out < 0) {
		r = err_set(e, errno, "creating %s: %s", ovl, strerror(errno));
		close(in);
		return r;
	}
	r = file_copy_sparse(in, out, NULL);
	if (r)
		err_set(e, -r, "copying %s/vm/%s to %s: %s", from->dir, TEMPLATE_DISK_FILE, ovl,
			strerror(-r));
	/* A file that grew while it was copied (the jail wrote on). */
	else if (fstat(out, &st) < 0 || (uint64_t)st.st_size > max)
		r = err_set(e, EFBIG, "%s/vm/%s grew past %llu bytes while it was copied: refused",
			    from->dir, TEMPLATE_DISK_FILE, (unsigned long long)max);
	close(in);
	if (close(out) < 0 && !r)
		r = err_set(e, errno, "writing %s: %s", ovl, strerror(errno));
	return r;
}

/* Boot the kernel on a copy of the template's disk (the ready
 * checkpoint's overlay copy): a new sandbox of peer's. */
static int template_cold(struct kilnd *d, const json_t *rec, json_t *body, const char *reason,
			 const struct peer *peer, json_t **view, struct api_err *e)
{
	const char *name = rec_str(rec, "name");
	char image[PATH_MAX], ovl[PATH_MAX + 16];
	struct sandbox_spec spec;
	struct sandbox *sb, *from;
	struct err ce;
	int r;

	from = template_sandbox(d, rec, e);
	if (!from)
		return -1;
	snprintf(image, sizeof(image), "%s", from->rec.image_path);
	if (json_object_set_new(body, "image", json_string(from->rec.spec.image)) ||
	    json_object_set_new(body, "network",
				json_string(firewall_network_name(from->rec.spec.network)))) {
		sandbox_put(from);
		api_err_set(e, API_E_INTERNAL, "template: out of memory");
		return -1;
	}
	if (!json_object_get(body, "disk_mib") && from->rec.spec.disk_mib)
		json_object_set_new(body, "disk_mib", json_integer(from->rec.spec.disk_mib));
	r = sandbox_spec_parse(body, &d->cfg.limits, &spec, e);
	if (r) {
		sandbox_put(from);
		return -1;
	}
	kilnd_lock(d);
	r = template_live_locked(d, from, e) ? 0 : -1;
	if (r == 0)
		from->cp_readers++;
	kilnd_unlock(d);
	if (r) {
		sandbox_spec_free(&spec);
		sandbox_put(from);
		return -1;
	}
	sb = sandbox_create_entry(d, peer->uid, &spec, image, false, false, e);
	r = -1;
	if (sb) {
		snprintf(ovl, sizeof(ovl), "%s/overlay", sb->dir);
		r = copy_template_disk(from, ovl, &ce);
		kilnd_lock(d);
		snprintf(sb->rec.tmpl, sizeof(sb->rec.tmpl), "%s", name);
		sb->refs++;
		kilnd_unlock(d);
		if (r) {
			api_err_set(e, API_E_IO_ERROR,
				    "template %s: cannot use its disk: %s; build the template again (POST /v1/templates)",
				    name, ce.msg);
			/* boots nothing: create_finish needs a boot; remove it by hand */
			kilnd_lock(d);
			sandbox_registry_remove_locked(d, sb);
			kilnd_unlock(d);
			sandbox_remove_dir(sb->dir);
			sandbox_put(sb);
			sandbox_put(sb);
			r = -1;
		} else {
			r = sandbox_create_finish(sb, NULL, view, e);
			if (r)
				sandbox_put(sb);
			else
				json_decref(*view);
		}
	}
	kilnd_lock(d);
	from->cp_readers--;
	pthread_cond_broadcast(&from->cv);
	kilnd_unlock(d);
	sandbox_put(from);
	if (r)
		return -1;
	*view = NULL;
	kilnd_lock(d);
	sandbox_boot_source(sb->rec.boot, "template_cold", NULL, reason);
	json_object_set_new(sb->rec.boot, "template", json_string(name));
	sandbox_persist_locked(sb);
	kilnd_unlock(d);
	*view = sandbox_view(sb);
	sandbox_put(sb);
	return *view ? 0 : -1;
}

int sandbox_from_template(struct kilnd *d, const json_t *body, const struct peer *peer,
			  json_t **view, struct api_err *e)
{
	static const char *const fields[] = { "template", "hostname",  "env",
					      "labels",   "timeout_s", "idle_timeout_s",
					      "console",  "cpus",      "memory_mib",
					      NULL };
	static const char *const fork_fields[] = { "hostname",       "labels",  "timeout_s",
						   "idle_timeout_s", "console", NULL };
	const char *name;
	char reason[ERR_MSG_MAX] = "";
	json_t *rec, *fb = NULL, *env = NULL;
	struct sandbox *from, *sb = NULL;
	int r = -1;

	if (json_fields_only(body, fields, "create from a template", e) ||
	    json_fields_string(body, "template", true, IMAGE_NAME_MAX, &name,
			       "create from a template", e))
		return -1;
	if (!(rec = template_load(d, name, e)))
		return -1;
	/* The template's env (its base image's under it) under the create's. */
	env = json_deep_copy(json_object_get(json_object_get(rec, "defaults"), "env"));
	if (!env)
		env = json_object();
	fb = json_object();
	if (!env || !fb ||
	    (json_is_object(json_object_get(body, "env")) &&
	     json_object_update(env, json_object_get(body, "env"))) ||
	    (json_object_get(body, "env") && !json_is_object(json_object_get(body, "env")))) {
		api_err_set(e,
			    json_object_get(body, "env") &&
					    !json_is_object(json_object_get(body, "env"))
				    ? API_E_BAD_FIELD
				    : API_E_INTERNAL,
			    "create from a template: %s",
			    json_object_get(body, "env") &&
					    !json_is_object(json_object_get(body, "env"))
				    ? "'env' must be an object of strings"
				    : "out of memory");
		goto out;
	}
	json_object_set(fb, "env", env);
	for (size_t i = 0; fork_fields[i]; i++)
		if (json_object_get(body, fork_fields[i]))
			json_object_set(fb, fork_fields[i], json_object_get(body, fork_fields[i]));
	/* The template's own sandbox never hibernates; its sandboxes have the
	 * daemon's default unless the create gives one. */
	if (!json_object_get(fb, "idle_timeout_s"))
		json_object_set_new(fb, "idle_timeout_s",
				    json_integer(d->cfg.limits.idle_timeout_default_s));
	/* The snapshot fixes cpus and memory_mib: other values boot cold. */
	from = template_sandbox(d, rec, e);
	if (!from)
		goto out;
	if (json_is_integer(json_object_get(body, "cpus")) &&
	    json_integer_value(json_object_get(body, "cpus")) != from->rec.spec.cpus)
		snprintf(reason, sizeof(reason),
			 "cpus %lld differs from the template snapshot's %u",
			 json_integer_value(json_object_get(body, "cpus")), from->rec.spec.cpus);
	else if (json_is_integer(json_object_get(body, "memory_mib")) &&
		 json_integer_value(json_object_get(body, "memory_mib")) !=
			 from->rec.spec.memory_mib)
		snprintf(reason, sizeof(reason),
			 "memory_mib %lld differs from the template snapshot's %u",
			 json_integer_value(json_object_get(body, "memory_mib")),
			 from->rec.spec.memory_mib);
	if (!reason[0]) {
		sb = fork_from(d, from, TEMPLATE_READY_CHECKPOINT, fb, peer->uid, NULL, name, view,
			       e);
		if (!sb &&
		    (e->code == API_E_BAD_FIELD || e->code == API_E_UNKNOWN_FIELD ||
		     e->code == API_E_LIMIT_REACHED || e->code == API_E_NOT_FOUND)) {
			sandbox_put(from);
			goto out;
		}
		if (!sb) {
			snprintf(reason, sizeof(reason),
				 "restoring the template snapshot failed: %.900s", e->msg);
			kilnd_log("template %s: %s; booting its disk instead", name, reason);
		}
	}
	sandbox_put(from);
	if (sb) {
		json_decref(*view);
		kilnd_lock(d);
		sandbox_boot_source(sb->rec.boot, "template",
				    json_string_value(json_object_get(sb->rec.boot, "checkpoint")),
				    NULL);
		json_object_set_new(sb->rec.boot, "template", json_string(name));
		sandbox_persist_locked(sb);
		kilnd_unlock(d);
		*view = sandbox_view(sb);
		sandbox_put(sb);
		SANDBOX_METRIC(d, forks);
		r = *view ? 0 : -1;
		if (r)
			api_err_set(e, API_E_INTERNAL, "create: out of memory");
		goto out;
	}
	/* Cold: the create's own cpus and memory_mib, the template's disk. */
	for (const char *const *f = (const char *const[]){ "cpus", "memory_mib", NULL }; *f; f++)
		if (json_object_get(body, *f))
			json_object_set(fb, *f, json_object_get(body, *f));
	r = template_cold(d, rec, fb, reason, peer, view, e);
out:
	json_decref(env);
	json_decref(fb);
	json_decref(rec);
	return r;
}
