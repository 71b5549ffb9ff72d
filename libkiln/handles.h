/*
 * handles: the layouts behind libkiln's opaque handles (never installed).
 *
 * A kiln_vm_config holds an internal vm_config whose strings all point
 * into `owned`, a list of copies the config frees; kiln_vm_create gives
 * the VM a deep copy of it (vm_create keeps pointers, not strings, and
 * vm_snapshot.c reads the overlay paths at snapshot time).
 */
#ifndef KILN_LIB_HANDLES_H
#define KILN_LIB_HANDLES_H

#include <pthread.h>

#include <kiln/vm.h>

#include "lib/base/err.h"
#include "vmm/core/vm.h"
#include "vmm/jail/seccomp_filter.h"

struct strs {
	char **v;
	size_t n, cap;
};

struct kiln_vm_config {
	struct vm_config c;
	struct strs owned;
	int has_rate;
	int firewall_http; /* the firewall's rules have `http`: they need egress_proxy */
	enum kiln_seccomp_mode seccomp;
	char err[ERR_MSG_MAX];
};

struct kiln_vm {
	struct vm *vm;
	struct vm_config cfg; /* strings in owned */
	struct strs owned;
	pthread_mutex_t lk;
	pthread_cond_t cv; /* `ended` became 1; CLOCK_MONOTONIC */
	pthread_t runner;
	int started, ended, joined;
	struct vm_result res;
	enum kiln_vm_exit exit;
	struct vm_snapshot_info snap;
	/* Each thread role's filter, built once before the first VM thread
	 * starts (libkiln/vm_seccomp.c); `filters_built` under lk. */
	enum kiln_seccomp_mode seccomp;
	int filters_built;
	struct seccomp_prog filters[SECCOMP_ROLE_COUNT];
	char err[ERR_MSG_MAX];
};

/* Copy s[len] (NUL added) into `owned`; NULL when out of memory. s NULL: NULL. */
char *strs_add(struct strs *o, const char *s, size_t len);
void strs_free(struct strs *o);
/* A copy of src in dst whose strings are in `owned`. 0 or -ENOMEM. */
int config_clone(const struct vm_config *src, struct vm_config *dst, struct strs *owned);
/* vm_config.thread_enter for a kiln_vm (ctx): its role's filter. */
int vm_seccomp_enter(void *ctx, enum vm_thread_role role);
/* Build the filters if not yet (under vm->lk). 0 or -errno, vm->err set. */
int vm_seccomp_prepare(kiln_vm *vm);
void vm_seccomp_free(kiln_vm *vm);
/* Set cfg's message; returns -code. */
int config_fail(kiln_vm_config *cfg, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Copy e's message into buf[256]; returns rc. */
int handle_err(char *buf, int rc, const struct err *e);

#endif
