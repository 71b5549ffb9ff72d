#include "devices/pseudo/timeline.h"

#include "lib/base/mono.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

void timeline_init(struct timeline *t, uint64_t t0_ns)
{
	memset(t, 0, sizeof(*t));
	pthread_mutex_init(&t->lock, NULL);
	t->t0_ns = t0_ns;
}

void timeline_destroy(struct timeline *t)
{
	pthread_mutex_destroy(&t->lock);
}

void timeline_mark_at(struct timeline *t, const char *name, uint64_t abs_ns, int derived)
{
	struct milestone *m;

	pthread_mutex_lock(&t->lock);
	if (t->n < TIMELINE_MAX) {
		m = &t->m[t->n++];
		snprintf(m->name, sizeof(m->name), "%s", name);
		m->ns = abs_ns > t->t0_ns ? abs_ns - t->t0_ns : 0;
		m->derived = derived;
		/* Keep the list ordered: a derived milestone lands in the past. */
		for (int i = t->n - 1; i > 0 && t->m[i].ns < t->m[i - 1].ns; i--) {
			struct milestone tmp = t->m[i];
			t->m[i] = t->m[i - 1];
			t->m[i - 1] = tmp;
		}
	}
	pthread_mutex_unlock(&t->lock);
}

void timeline_mark(struct timeline *t, const char *name)
{
	timeline_mark_at(t, name, mono_ns(), 0);
}

int timeline_has(struct timeline *t, const char *name)
{
	int found = 0;

	pthread_mutex_lock(&t->lock);
	for (int i = 0; i < t->n && !found; i++)
		found = strcmp(t->m[i].name, name) == 0;
	pthread_mutex_unlock(&t->lock);
	return found;
}

int timeline_count(struct timeline *t)
{
	int n;

	pthread_mutex_lock(&t->lock);
	n = t->n;
	pthread_mutex_unlock(&t->lock);
	return n;
}

int timeline_get(struct timeline *t, int i, char *name, size_t n, uint64_t *ns, int *derived)
{
	int r = -ERANGE;

	pthread_mutex_lock(&t->lock);
	if (i >= 0 && i < t->n) {
		if (name && n)
			snprintf(name, n, "%s", t->m[i].name);
		if (ns)
			*ns = t->m[i].ns;
		if (derived)
			*derived = t->m[i].derived;
		r = 0;
	}
	pthread_mutex_unlock(&t->lock);
	return r;
}

int timeline_find(struct timeline *t, const char *name, uint64_t *ns)
{
	int r = -ENOENT;

	pthread_mutex_lock(&t->lock);
	for (int i = 0; i < t->n && r; i++) {
		if (strcmp(t->m[i].name, name) == 0) {
			if (ns)
				*ns = t->m[i].ns;
			r = 0;
		}
	}
	pthread_mutex_unlock(&t->lock);
	return r;
}
