/* Which VM a container runs in; see rt_pod.h. */
#include "api/runtime/rt_pod.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

struct engine {
	const char *name, *type_key, *id_key;
};

static const struct engine engines[] = {
	{ "containerd", "io.kubernetes.cri.container-type", "io.kubernetes.cri.sandbox-id" },
	{ "CRI-O", "io.kubernetes.cri-o.ContainerType", "io.kubernetes.cri-o.SandboxID" },
};

/* One engine's word on the container: 0 with *pod (role NONE when the
 * engine said nothing), or -EINVAL. */
static int engine_says(const struct engine *en, const json_t *a, const char *id, struct rt_pod *pod,
		       struct err *e)
{
	const char *type = json_string_value(json_object_get(a, en->type_key));
	const char *sid = json_string_value(json_object_get(a, en->id_key));

	memset(pod, 0, sizeof(*pod));
	if (!type)
		return 0;
	if (strcmp(type, "sandbox") && strcmp(type, "container"))
		return err_set(e, EINVAL, "annotation %s \"%.32s\": want sandbox or container",
			       en->type_key, type);
	if (!sid || rt_id_check(sid, NULL) < 0)
		return err_set(e, EINVAL,
			       "annotation %s: a %s's %s must name its sandbox (a container ID)",
			       en->type_key, type, en->id_key);
	if (!strcmp(type, "sandbox") && strcmp(sid, id))
		return err_set(e, EINVAL,
			       "annotation %s \"%.64s\": a pod's sandbox is its own sandbox, \"%s\"",
			       en->id_key, sid, id);
	if (!strcmp(type, "container") && !strcmp(sid, id))
		return err_set(e, EINVAL,
			       "annotation %s: container \"%s\" names itself as its sandbox",
			       en->id_key, id);
	pod->role = !strcmp(type, "sandbox") ? RT_POD_SANDBOX : RT_POD_MEMBER;
	snprintf(pod->sandbox, sizeof(pod->sandbox), "%s", sid);
	return 0;
}

int rt_pod_decide(const json_t *annotations, const char *id, struct rt_pod *pod, struct err *e)
{
	struct rt_pod said[2];

	for (size_t i = 0; i < 2; i++)
		if (engine_says(&engines[i], annotations, id, &said[i], e) < 0)
			return -EINVAL;
	if (said[0].role && said[1].role &&
	    (said[0].role != said[1].role || strcmp(said[0].sandbox, said[1].sandbox)))
		return err_set(e, EINVAL,
			       "containerd's and CRI-O's pod annotations disagree about container "
			       "\"%s\": keep one engine's",
			       id);
	*pod = said[0].role ? said[0] : said[1];
	return 0;
}

enum rt_pod_role rt_pod_role(const json_t *annotations, const char *id)
{
	struct rt_pod pod;

	return rt_pod_decide(annotations, id, &pod, NULL) == 0 ? pod.role : RT_POD_NONE;
}
