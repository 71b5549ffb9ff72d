/*
 * fuzz_rt_state: a container's state.json (api/runtime/rt_state.c),
 * which anyone who can write kiln-runtime's --root could plant.
 *
 * Input: the record.
 * Invariants: no crash or leak; a failure is -EINVAL with a message; a
 * record accepted has a valid ID and reads back the same after
 * rt_state_encode (the writer and the reader agree); what `state` and
 * `list --format json` print of it is JSON that reads back.
 */
#include <errno.h>

#include "api/runtime/rt_state.h"
#include "lib/base/json.h"
#include "fuzz.h"

static void same(const struct rt_state_rec *a, const struct rt_state_rec *b)
{
	FUZZ_ASSERT(!strcmp(a->id, b->id) && !strcmp(a->bundle, b->bundle) &&
		    !strcmp(a->rootfs, b->rootfs) && !strcmp(a->created, b->created) &&
		    !strcmp(a->cgroup, b->cgroup) && !strcmp(a->netns, b->netns) &&
		    !strcmp(a->tap, b->tap));
	FUZZ_ASSERT(a->status == b->status && a->shim.pid == b->shim.pid &&
		    a->shim.start == b->shim.start && a->vmm.pid == b->vmm.pid &&
		    a->vmm.start == b->vmm.start && a->id_range == b->id_range);
	FUZZ_ASSERT(!a->annotations == !b->annotations &&
		    (!a->annotations || json_equal(a->annotations, b->annotations)));
}

static void renders(const struct rt_state_rec *r)
{
	struct rt_state_view v = { r, r->status, r->shim.pid };
	char *s = NULL;
	json_t *j;

	FUZZ_ASSERT(rt_state_render(&v, &s, NULL) == 0);
	j = json_strict_loads(s, NULL);
	FUZZ_ASSERT(json_is_object(j));
	json_decref(j);
	free(s);
	FUZZ_ASSERT(rt_state_render_list(&v, 1, true, false, &s, NULL) == 0);
	j = json_strict_loads(s, NULL);
	FUZZ_ASSERT(json_is_array(j) && json_array_size(j) == 1);
	json_decref(j);
	free(s);
	FUZZ_ASSERT(rt_state_render_list(&v, 1, false, false, &s, NULL) == 0);
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rt_state_rec a, b;
	struct err e = { { 0 } };
	char *s = NULL;
	int r;

	r = rt_state_decode((const char *)data, size, &a, &e);
	if (r) {
		FUZZ_ASSERT(r == -EINVAL && e.msg[0] && !a.annotations);
		return 0;
	}
	FUZZ_ASSERT(rt_id_check(a.id, NULL) == 0);
	FUZZ_ASSERT(rt_state_encode(&a, &s, &e) == 0);
	FUZZ_ASSERT(rt_state_decode(s, strlen(s), &b, &e) == 0);
	same(&a, &b);
	renders(&a);
	free(s);
	rt_state_rec_free(&a);
	rt_state_rec_free(&b);
	return 0;
}
