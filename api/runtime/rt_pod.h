/*
 * rt_pod: which VM a container runs in. Kubernetes' CRI runtimes mark a
 * pod's containers with annotations: the pod's sandbox (pause) container
 * boots the VM, each further container of the pod runs inside that VM
 * (its own rootfs share, mount namespace and process, the pod's network),
 * as Kata and runsc do:
 *
 *   containerd: io.kubernetes.cri.container-type  sandbox | container
 *               io.kubernetes.cri.sandbox-id      the sandbox's ID
 *   CRI-O:      io.kubernetes.cri-o.ContainerType sandbox | container
 *               io.kubernetes.cri-o.SandboxID     the sandbox's ID
 *
 * Without them a container has a VM of its own.
 *
 * Contract: pure. Refused, one line: a type other than those two, a
 * member without a valid sandbox ID, a sandbox whose sandbox ID is not
 * its own, the two engines' annotations disagreeing.
 */
#ifndef KILN_RT_POD_H
#define KILN_RT_POD_H

#include <jansson.h>

#include "api/runtime/rt_state.h"
#include "lib/base/err.h"

enum rt_pod_role {
	RT_POD_NONE,    /* a VM of its own */
	RT_POD_SANDBOX, /* boots the pod's VM */
	RT_POD_MEMBER,  /* runs in the VM of the sandbox `sandbox` */
};

struct rt_pod {
	enum rt_pod_role role;
	char sandbox[RT_ID_MAX + 1]; /* SANDBOX: its own ID; MEMBER: the sandbox's */
};

/* The role of container id given its annotations (NULL: none). */
int rt_pod_decide(const json_t *annotations, const char *id, struct rt_pod *pod, struct err *e);

/* The role alone; annotations rt_pod_decide refuses are RT_POD_NONE
 * (create says why). */
enum rt_pod_role rt_pod_role(const json_t *annotations, const char *id);

#endif
