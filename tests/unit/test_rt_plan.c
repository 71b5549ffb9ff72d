/*
 * api/runtime/rt_plan.c: a parsed config.json as the VM's size, its host
 * cgroup (cgroupfs and systemd forms), the host binds, the kernel command
 * line, kiln-vmm's arguments and ctr_create (docs/agent-protocol.md 7.9);
 * and each refusal, one line.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <sys/socket.h>

#include "api/runtime/rt_plan.h"

static struct err e;
static struct rt_config cfg;

#define MIB (1024 * 1024)
#define HEAD "{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"rootfs\"},"
#define PROC "\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\"}"

static void load(const char *doc)
{
	rt_config_free(&cfg);
	if (rt_config_parse(doc, strlen(doc), &cfg, &e) != 0)
		fail_msg("config refused: %s", e.msg);
}

#define LOAD(...) load(HEAD PROC __VA_ARGS__ "}")

static void sized(struct rt_sizing *s)
{
	memset(&e, 0, sizeof(e));
	if (rt_plan_sizing(&cfg, s, &e) != 0)
		fail_msg("sizing refused: %s", e.msg);
}

static void size_refused(const char *want)
{
	struct rt_sizing s;

	assert_int_equal(rt_plan_sizing(&cfg, &s, &e), -EINVAL);
	if (!strstr(e.msg, want))
		fail_msg("message \"%s\" lacks \"%s\"", e.msg, want);
}

static void test_sizing(void **state)
{
	struct rt_sizing s;

	(void)state;
	LOAD();
	sized(&s);
	assert_int_equal(s.mem_mib, RT_RAM_DEFAULT_MIB);
	assert_int_equal(s.cpus, 1);
	assert_int_equal(s.host_memory_max, (int64_t)(512 + RT_VMM_OVERHEAD_MIB) * MIB);
	assert_int_equal(s.cpu_quota, -1);
	assert_null(s.kernel);
	LOAD(",\"linux\":{\"resources\":{\"memory\":{\"limit\":268435456}}}");
	sized(&s);
	assert_int_equal(s.mem_mib, 256);
	assert_int_equal(s.host_memory_max, (int64_t)(256 + RT_VMM_OVERHEAD_MIB) * MIB);
	LOAD(",\"linux\":{\"resources\":{\"memory\":{\"limit\":268435457}}}");
	sized(&s);
	assert_int_equal(s.mem_mib, 257); /* rounded up: the limit is what the guest may use */
	LOAD(",\"linux\":{\"resources\":{\"memory\":{\"limit\":33554432}}}");
	size_refused("memory.limit is 33554432 bytes: a kiln VM needs at least 64 MiB");
	LOAD(",\"annotations\":{\"io.kiln.memory\":\"1024\"},"
	     "\"linux\":{\"resources\":{\"memory\":{\"limit\":268435456}}}");
	sized(&s);
	assert_int_equal(s.mem_mib, 1024);
	LOAD(",\"annotations\":{\"io.kiln.memory\":\"lots\"}");
	size_refused("annotation io.kiln.memory \"lots\": want a number from 64");
	LOAD(",\"annotations\":{\"io.kiln.memory\":\"32\"}");
	size_refused("io.kiln.memory \"32\"");
	/* CPU: quota over period, rounded up; the quota stays for the host */
	LOAD(",\"linux\":{\"resources\":{\"cpu\":{\"quota\":150000,\"period\":100000}}}");
	sized(&s);
	assert_int_equal(s.cpus, 2);
	assert_int_equal(s.cpu_quota, 150000);
	assert_int_equal(s.cpu_period, 100000);
	LOAD(",\"linux\":{\"resources\":{\"cpu\":{\"quota\":50000}}}");
	sized(&s);
	assert_int_equal(s.cpus, 1);
	assert_int_equal(s.cpu_period, RT_CPU_PERIOD_DEFAULT);
	LOAD(",\"linux\":{\"resources\":{\"cpu\":{\"quota\":10000000,\"period\":100000}}}");
	sized(&s);
	assert_int_equal(s.cpus, RT_CPUS_MAX);
	assert_int_equal(s.cpu_quota, 10000000);
	LOAD(",\"linux\":{\"resources\":{\"cpu\":{\"cpus\":\"0-3,5\"}}}");
	sized(&s);
	assert_int_equal(s.cpus, 5);
	LOAD(",\"linux\":{\"resources\":{\"cpu\":{\"cpus\":\"0-3,2,3\"}}}");
	sized(&s);
	assert_int_equal(s.cpus, 4);
	static const char *const bad_sets[] = { "3-1", "0,", "a", "0-", "-1", "1024", "0,,1" };
	for (size_t i = 0; i < sizeof(bad_sets) / sizeof(bad_sets[0]); i++) {
		char doc[256];

		snprintf(doc, sizeof(doc),
			 HEAD PROC ",\"linux\":{\"resources\":{\"cpu\":{\"cpus\":\"%s\"}}}}",
			 bad_sets[i]);
		load(doc);
		size_refused("is not a CPU list");
	}
	LOAD(",\"annotations\":{\"io.kiln.cpus\":\"8\",\"io.kiln.kernel\":\"vmlinux-6.1.0\"},"
	     "\"linux\":{\"resources\":{\"cpu\":{\"quota\":150000}}}");
	sized(&s);
	assert_int_equal(s.cpus, 8);
	assert_string_equal(s.kernel, "vmlinux-6.1.0");
	LOAD(",\"annotations\":{\"io.kiln.cpus\":\"65\"}");
	size_refused("io.kiln.cpus \"65\": want a number from 1 to 64");
	LOAD(",\"annotations\":{\"io.kiln.kernel\":\"../../etc/shadow\"}");
	size_refused("io.kiln.kernel \"../../etc/shadow\": want the name of a kernel file");
	LOAD(",\"annotations\":{\"io.kiln.kernel\":\".hidden\"}");
	size_refused("io.kiln.kernel");
	LOAD(",\"annotations\":{\"io.kiln.firewall\":\"{}\"}");
	size_refused("io.kiln.firewall is not supported yet");
	LOAD(",\"annotations\":{\"io.kiln.warm\":\"maybe\"}");
	size_refused("io.kiln.warm \"maybe\": want true");
	rt_config_free(&cfg);
}

static void cgroup_is(const char *path, bool systemd, const char *want)
{
	char doc[512], out[RT_PATH_MAX];

	if (path)
		snprintf(doc, sizeof(doc), HEAD PROC ",\"linux\":{\"cgroupsPath\":\"%s\"}}", path);
	else
		snprintf(doc, sizeof(doc), HEAD PROC "}");
	load(doc);
	memset(&e, 0, sizeof(e));
	if (want[0] == '/') {
		if (rt_plan_cgroup(&cfg, "c1", systemd, out, sizeof(out), &e) != 0)
			fail_msg("cgroupsPath \"%s\" refused: %s", path, e.msg);
		assert_string_equal(out, want);
	} else {
		assert_int_equal(rt_plan_cgroup(&cfg, "c1", systemd, out, sizeof(out), &e),
				 -EINVAL);
		if (!strstr(e.msg, want))
			fail_msg("message \"%s\" lacks \"%s\"", e.msg, want);
	}
}

static void test_cgroup(void **state)
{
	(void)state;
	/* cgroupfs (containerd's CRI, Podman with cgroup_manager = "cgroupfs") */
	cgroup_is("/kubepods/besteffort/pod1/5e5", false,
		  "/sys/fs/cgroup/kubepods/besteffort/pod1/5e5");
	cgroup_is("a/b/", false, "/sys/fs/cgroup/a/b");
	cgroup_is(NULL, false, "/sys/fs/cgroup/kiln-runtime/c1");
	cgroup_is("", false, "/sys/fs/cgroup/kiln-runtime/c1");
	cgroup_is("/a/../../etc", false, "has a '.' or '..' component");
	cgroup_is("/a/./b", false, "has a '.' or '..' component");
	cgroup_is("/a//b", false, "has an empty component");
	cgroup_is("/", false, "names the root cgroup");
	cgroup_is("///", false, "names the root cgroup");
	cgroup_is("machine.slice:libpod:f00", false,
		  "is systemd's form: pass --systemd-cgroup, or give a path");
	/* systemd (Podman's default, Docker's with native.cgroupdriver=systemd) */
	cgroup_is("machine.slice:libpod:f00", true,
		  "/sys/fs/cgroup/machine.slice/libpod-f00.scope");
	cgroup_is("user-1000.slice:podman:c1", true,
		  "/sys/fs/cgroup/user.slice/user-1000.slice/podman-c1.scope");
	cgroup_is("a-b-c.slice:p:n", true,
		  "/sys/fs/cgroup/a.slice/a-b.slice/a-b-c.slice/p-n.scope");
	cgroup_is(":docker:c0ffee", true, "/sys/fs/cgroup/system.slice/docker-c0ffee.scope");
	cgroup_is("-.slice:p:n", true, "/sys/fs/cgroup/p-n.scope");
	cgroup_is("kubepods.slice::pod1.slice", true, "/sys/fs/cgroup/kubepods.slice/pod1.slice");
	cgroup_is("machine.slice::n", true, "/sys/fs/cgroup/machine.slice/n.scope");
	cgroup_is(NULL, true, "/sys/fs/cgroup/system.slice/kiln-runtime-c1.scope");
	cgroup_is("machine.slice:libpod", true, "want slice:prefix:name");
	cgroup_is("a:b:c:d", true, "want slice:prefix:name");
	cgroup_is("machine:libpod:f00", true, "\"machine\" is not a systemd slice name");
	cgroup_is("a--b.slice:p:n", true, "has an empty part");
	cgroup_is("a-.slice:p:n", true, "has an empty part");
	cgroup_is("machine.slice:lib/pod:n", true, "the prefix and name must be plain names");
	cgroup_is("machine.slice:p:..", true, "the prefix and name must be plain names");
	cgroup_is("machine.slice:p:", true, "the prefix and name must be plain names");
	cgroup_is("../x.slice:p:n", true, "the prefix and name must be plain names");
	rt_config_free(&cfg);
}

/* Field k of mounts[i] of a ctr_create's mounts m, as a string. */
static const char *mfield(json_t *m, size_t i, const char *k)
{
	return json_string_value(json_object_get(json_array_get(m, i), k));
}

static struct rt_plan plan;

static void built_as(const char *doc, const char *id, enum rt_pod_role role)
{
	load(doc);
	rt_plan_free(&plan);
	memset(&e, 0, sizeof(e));
	if (rt_plan_build(&cfg, id, role, &plan, &e) != 0)
		fail_msg("plan refused: %s", e.msg);
}

static void built(const char *doc, const char *id)
{
	built_as(doc, id, RT_POD_NONE);
}

static void build_refused(const char *doc, const char *id, const char *want)
{
	load(doc);
	rt_plan_free(&plan);
	assert_int_equal(rt_plan_build(&cfg, id, RT_POD_NONE, &plan, &e), -EINVAL);
	if (!strstr(e.msg, want))
		fail_msg("message \"%s\" lacks \"%s\"", e.msg, want);
	rt_plan_free(&plan);
}

static void test_ctr_create(void **state)
{
	char *s;

	(void)state;
	built(HEAD "\"process\":{\"args\":[\"sh\",\"-c\",\"echo hi\"],\"env\":[\"PATH=/bin\"],"
		   "\"cwd\":\"/w\",\"user\":{\"uid\":1000,\"gid\":100,\"umask\":18,"
		   "\"additionalGids\":[5]},\"terminal\":true,\"consoleSize\":{\"height\":40,"
		   "\"width\":120}},\"hostname\":\"c1\","
		   "\"mounts\":[{\"destination\":\"/proc\",\"type\":\"proc\",\"source\":\"proc\","
		   "\"options\":[\"nosuid\",\"noexec\",\"nodev\"]}]}",
	      "c1");
	s = json_dumps(plan.ctr_create, JSON_COMPACT | JSON_PRESERVE_ORDER);
	assert_string_equal(
		s,
		"{\"type\":\"ctr_create\",\"cid\":\"c1\",\"rootfs\":{\"share\":\"r\",\"readonly\":false},"
		"\"mounts\":[{\"destination\":\"/proc\",\"type\":\"proc\",\"options\":[\"nosuid\","
		"\"noexec\",\"nodev\"]}],\"process\":{\"args\":[\"sh\",\"-c\",\"echo hi\"],"
		"\"env\":[\"PATH=/bin\"],\"cwd\":\"/w\",\"uid\":1000,\"gid\":100,"
		"\"additional_gids\":[5],\"terminal\":true,\"umask\":18,\"rows\":40,\"cols\":120},"
		"\"hostname\":\"c1\"}");
	free(s);
	assert_string_equal(plan.cmdline, "kiln.oci kiln.shares=r:/run/kiln/root kiln.hostname=c1");
	assert_int_equal(plan.nbinds, 0);
	rt_plan_free(&plan);
}

/* linux.resources.pids.limit: the guest cgroup's pids.max (ctr_create's
 * pids_max); none at 0 or less; above the kernel's bound refused. */
static void test_pids(void **state)
{
	(void)state;
	built(HEAD PROC ",\"linux\":{\"resources\":{\"pids\":{\"limit\":7}}}}", "c1");
	assert_int_equal(json_integer_value(json_object_get(plan.ctr_create, "pids_max")), 7);
	built(HEAD PROC ",\"linux\":{\"resources\":{\"pids\":{\"limit\":0}}}}", "c1");
	assert_null(json_object_get(plan.ctr_create, "pids_max"));
	build_refused(HEAD PROC ",\"linux\":{\"resources\":{\"pids\":{\"limit\":4194305}}}}", "c1",
		      "above the guest kernel's 4194304 processes");
	rt_plan_free(&plan);
}

/* A pod: the sandbox's VM has the share "pod"; a further container's
 * root and binds are its slot there (rt_plan.h "Pods"). */
static void test_pod(void **state)
{
#define POD_MOUNTS                                                                         \
	"\"mounts\":[{\"destination\":\"/etc/hosts\",\"type\":\"bind\",\"source\":\"/h\"," \
	"\"options\":[\"rbind\",\"ro\"]},{\"destination\":\"/data\",\"type\":\"bind\","    \
	"\"source\":\"/d\",\"options\":[\"rbind\",\"rw\"]}]}"
	json_t *m;
	char *s;

	(void)state;
	built_as(HEAD PROC "," POD_MOUNTS, "pod1", RT_POD_SANDBOX);
	assert_true(plan.pod_share);
	assert_null(plan.member);
	assert_string_equal(plan.cmdline,
			    "kiln.oci kiln.shares=r:/run/kiln/root,bro:/run/kiln/binds/"
			    "ro:ro,brw:/run/kiln/binds/rw,pod:/run/kiln/pod");

	built_as("{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"rootfs\",\"readonly\":true}," PROC
		 "," POD_MOUNTS,
		 "c2", RT_POD_MEMBER);
	assert_false(plan.pod_share);
	assert_string_equal(plan.member, "c2");
	s = json_dumps(json_object_get(plan.ctr_create, "rootfs"),
		       JSON_COMPACT | JSON_PRESERVE_ORDER);
	assert_string_equal(s, "{\"share\":\"pod\",\"source\":\"c2/root\",\"readonly\":true}");
	free(s);
	m = json_object_get(plan.ctr_create, "mounts");
	assert_string_equal(mfield(m, 0, "share"), "pod");
	assert_string_equal(mfield(m, 0, "source"), "c2/binds/ro/0");
	assert_string_equal(mfield(m, 1, "source"), "c2/binds/rw/0");
	assert_int_equal(plan.nbinds, 2);
	assert_true(plan.binds[0].readonly);
	assert_string_equal(plan.binds[1].source, "/d");
	rt_plan_free(&plan);
#undef POD_MOUNTS
}

/* The privileges and the confinement reach ctr_create and ctr_exec in
 * the agent's words, and the agent's own parser reads them back whole. */
static void test_ctr_create_privileges(void **state)
{
	struct agent_msg m;
	struct agent_err err;
	json_t *x;

	(void)state;
	built(HEAD "\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\",\"noNewPrivileges\":true,"
		   "\"oomScoreAdj\":-17,\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"hard\":1234,"
		   "\"soft\":1234}],\"capabilities\":{\"bounding\":[\"CAP_KILL\"],"
		   "\"effective\":[\"CAP_KILL\"],\"permitted\":[\"CAP_KILL\"]}},"
		   "\"linux\":{\"sysctl\":{\"net.ipv4.ip_forward\":\"1\"},"
		   "\"maskedPaths\":[\"/proc/kcore\"],\"readonlyPaths\":[\"/proc/sys\"],"
		   "\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"flags\":["
		   "\"SECCOMP_FILTER_FLAG_SPEC_ALLOW\"],\"syscalls\":[{\"names\":[\"read\"],"
		   "\"action\":\"SCMP_ACT_ALLOW\"},{\"names\":[\"personality\"],\"action\":"
		   "\"SCMP_ACT_TRACE\",\"errnoRet\":5,\"args\":[{\"index\":0,\"value\":"
		   "4294967296,\"valueTwo\":3,\"op\":\"SCMP_CMP_MASKED_EQ\"}]}]}}}",
	      "c1");
	assert_int_equal(agent_msg_parse(plan.ctr_create, AGENT_CTX_REQUEST, &m, &err), AGENT_OK);
	assert_memory_equal(&m.u.ctr_create.proc.privs, &cfg.process.privs,
			    sizeof(cfg.process.privs));
	assert_int_equal(m.u.ctr_create.nsysctl, 1);
	assert_string_equal(m.u.ctr_create.sysctl[0].value, "1");
	assert_string_equal(m.u.ctr_create.masked[0], "/proc/kcore");
	assert_string_equal(m.u.ctr_create.readonly[0], "/proc/sys");
	assert_non_null(m.u.ctr_create.seccomp);
	assert_int_equal(m.u.ctr_create.seccomp->default_action, AGENT_SC_ERRNO);
	assert_int_equal(m.u.ctr_create.seccomp->default_errno, 1);
	assert_true(m.u.ctr_create.seccomp->spec_allow);
	assert_int_equal(m.u.ctr_create.seccomp->nrules, 2);
	assert_memory_equal(m.u.ctr_create.seccomp->rules, cfg.seccomp->rules,
			    2 * sizeof(*cfg.seccomp->rules));
	agent_msg_free(&m);
	/* exec's process object: the same fields */
	x = json_pack("{s:s,s:s,s:i,s:o}", "type", "ctr_exec", "cid", "c1", "exec", 1, "process",
		      rt_plan_process(&cfg.process));
	assert_int_equal(agent_msg_parse(x, AGENT_CTX_REQUEST, &m, &err), AGENT_OK);
	assert_memory_equal(&m.u.ctr_exec.proc.privs, &cfg.process.privs,
			    sizeof(cfg.process.privs));
	agent_msg_free(&m);
	json_decref(x);
	rt_plan_free(&plan);
}

/* Podman's mounts: made in the guest, or bound from the host through
 * the two bind shares; its /dev/shm bind becomes a guest tmpfs. */
static void test_podman_mounts(void **state)
{
	json_t *m;

	(void)state;
	built("{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"/m\",\"readonly\":true}," PROC
	      ",\"hostname\":\"f00\",\"mounts\":["
	      "{\"destination\":\"/dev\",\"type\":\"tmpfs\",\"source\":\"tmpfs\",\"options\":[\"nosuid\","
	      "\"strictatime\",\"mode=755\",\"size=65536k\",\"tmpcopyup\"]},"
	      "{\"destination\":\"/sys/fs/cgroup\",\"type\":\"cgroup\",\"source\":\"cgroup\","
	      "\"options\":[\"rprivate\",\"ro\"]},"
	      "{\"destination\":\"/etc/hosts\",\"type\":\"bind\",\"source\":\"/u/hosts\","
	      "\"options\":[\"bind\",\"rprivate\"]},"
	      "{\"destination\":\"/data\",\"type\":\"bind\",\"source\":\"/srv/vol\",\"options\":[\"ro\","
	      "\"rbind\"]},"
	      "{\"destination\":\"/etc/resolv.conf\",\"type\":\"bind\",\"source\":\"/u/resolv.conf\","
	      "\"options\":[\"bind\"]},"
	      "{\"destination\":\"/dev/shm\",\"type\":\"bind\",\"source\":\"/u/shm\",\"options\":[\"bind\"]}]}",
	      "f00");
	m = json_object_get(plan.ctr_create, "mounts");
	assert_int_equal(json_array_size(m), 6);
	/* crun's tmpcopyup is the runtime's word, not tmpfs's */
	assert_int_equal(json_array_size(json_object_get(json_array_get(m, 0), "options")), 4);
	assert_string_equal(mfield(m, 1, "type"), "cgroup2");
	assert_string_equal(mfield(m, 2, "share"), "brw");
	assert_string_equal(mfield(m, 2, "source"), "0");
	assert_string_equal(mfield(m, 3, "share"), "bro");
	assert_string_equal(mfield(m, 3, "source"), "0");
	assert_string_equal(mfield(m, 4, "source"), "1");
	assert_string_equal(mfield(m, 5, "type"), "tmpfs");
	assert_int_equal(plan.nbinds, 3);
	assert_string_equal(plan.binds[0].source, "/u/hosts");
	assert_false(plan.binds[0].readonly);
	assert_true(plan.binds[1].readonly);
	assert_true(plan.binds[1].recursive); /* rbind */
	assert_false(plan.binds[0].recursive);
	assert_int_equal(plan.binds[1].index, 0);
	assert_int_equal(plan.binds[2].index, 1);
	assert_true(json_is_true(
		json_object_get(json_object_get(plan.ctr_create, "rootfs"), "readonly")));
	assert_string_equal(plan.cmdline,
			    "kiln.oci kiln.shares=r:/run/kiln/root:ro,"
			    "bro:/run/kiln/binds/ro:ro,brw:/run/kiln/binds/rw "
			    "kiln.hostname=f00");
	rt_plan_free(&plan);
}

static void test_build_refusals(void **state)
{
	char id[RT_CID_MAX + 2];

	(void)state;
	build_refused(HEAD PROC ",\"mounts\":[{\"destination\":\"/x\",\"type\":\"overlay\","
				"\"source\":\"o\"}]}",
		      "c1",
		      "mounts[0] (/x) of type \"overlay\" cannot be made in a VM: use proc, sysfs, "
		      "tmpfs, devpts, mqueue, cgroup or a bind");
	build_refused(HEAD PROC ",\"mounts\":[{\"destination\":\"/x\"}]}", "c1",
		      "of type \"\" cannot be made in a VM");
	build_refused(HEAD PROC ",\"mounts\":[{\"destination\":\"/x\",\"type\":\"tmpfs\","
				"\"options\":[\"a,b\"]}]}",
		      "c1",
		      "mounts[0].options[0] \"a,b\": an option is 1 to 255 bytes without ','");
	build_refused(HEAD PROC ",\"mounts\":[{\"destination\":\"/x\",\"type\":\"bind\","
				"\"source\":\"rel/dir\"}]}",
		      "c1", "a bind's source must be an absolute host path");
	static const char *const bad_hosts[] = {
		"a b",  "-x",  "x-",
		"a..b", "a.",  ".a",
		"a.-b", "a_b", "0123456789012345678901234567890123456789012345678901234567890123"
	};
	for (size_t i = 0; i < sizeof(bad_hosts) / sizeof(bad_hosts[0]); i++) {
		char doc[256];

		snprintf(doc, sizeof(doc), HEAD PROC ",\"hostname\":\"%s\"}", bad_hosts[i]);
		build_refused(doc, "c1", "want dot-separated labels of 1 to 63 letters");
	}
	built(HEAD PROC ",\"hostname\":\"web-1.pod.Cluster-local\"}", "c1");
	rt_plan_free(&plan);
	{
		/* one mount more than the guest takes */
		size_t cap = 64 * (RT_MOUNTS_MAX + 2), k;
		char *doc = malloc(cap);

		k = (size_t)snprintf(doc, cap, HEAD PROC ",\"mounts\":[");
		for (int i = 0; i <= RT_MOUNTS_MAX; i++)
			k += (size_t)snprintf(doc + k, cap - k,
					      "%s{\"destination\":\"/m%d\",\"type\":\"tmpfs\"}",
					      i ? "," : "", i);
		snprintf(doc + k, cap - k, "]}");
		build_refused(doc, "c1", "257 mounts; a VM's container takes at most 256");
		free(doc);
	}
	memset(id, 'a', RT_CID_MAX + 1);
	id[RT_CID_MAX + 1] = '\0';
	build_refused(HEAD PROC "}", id,
		      "container ID of 129 bytes: kiln-runtime takes at most 128");
	id[RT_CID_MAX] = '\0';
	built(HEAD PROC "}", id);
	rt_plan_free(&plan);
	rt_config_free(&cfg);
}

static void test_vmm_argv(void **state)
{
	struct rt_sizing s = { .mem_mib = 256, .cpus = 2 };
	struct rt_vmm_launch l = {
		.vmm = "/usr/local/bin/kiln-vmm",
		.kernel = "/usr/local/lib/kiln/vmlinux",
		.initrd = "/usr/local/lib/kiln/oci-init.cpio",
		.vsock = "/run/kiln-runtime/c1/vm/vsock",
		.control = "/run/kiln-runtime/c1/vm/control",
		.jail_dir = "/run/kiln-runtime/c1/vm",
		.jail_id = 1000000000,
		.root_fd = 5,
		.bro_fd = -1,
		.brw_fd = 7,
		.pod_fd = -1,
		.root_readonly = true,
		.size = &s,
		.cmdline = "kiln.oci kiln.shares=r:/run/kiln/root:ro,brw:/run/kiln/binds/rw",
		.net = "tap=kt0,mac=0a:58:0a:58:00:05,ip=10.88.0.5/16",
	};
	static const char *const want[] = {
		"/usr/local/bin/kiln-vmm",
		"--kernel",
		"/usr/local/lib/kiln/vmlinux",
		"--initrd",
		"/usr/local/lib/kiln/oci-init.cpio",
		"--mem",
		"256",
		"--cpus",
		"2",
		"--vsock-path",
		"/run/kiln-runtime/c1/vm/vsock",
		"--control",
		"/run/kiln-runtime/c1/vm/control",
		"--cmdline",
		"kiln.oci kiln.shares=r:/run/kiln/root:ro,brw:/run/kiln/binds/rw",
		"--share",
		"fd=5:r:ro",
		"--share",
		"fd=7:brw",
		"--net",
		"tap=kt0,mac=0a:58:0a:58:00:05,ip=10.88.0.5/16",
		"--jail",
		"/run/kiln-runtime/c1/vm",
		"--uid",
		"1000000000",
		"--gid",
		"1000000000",
	};
	static struct rt_argv a;

	(void)state;
	assert_int_equal(rt_plan_vmm_argv(&l, &a, &e), 0);
	assert_int_equal(a.argc, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < a.argc; i++)
		assert_string_equal(a.argv[i], want[i]);
	assert_null(a.argv[a.argc]);
	l.cmdline = "kiln.hostname=x\" init=/bin/sh";
	assert_int_equal(rt_plan_vmm_argv(&l, &a, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "quote or a control byte"));
	l.cmdline = "kiln.oci";
	l.vsock = "vm/vsock";
	assert_int_equal(rt_plan_vmm_argv(&l, &a, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "the vsock socket: want an absolute path"));
	l.vsock = "/run/x\n--restore /tmp";
	assert_int_equal(rt_plan_vmm_argv(&l, &a, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "control character"));
	l.vsock = "/v";
	l.jail_id = 0;
	assert_int_equal(rt_plan_vmm_argv(&l, &a, &e), -EINVAL);
	l.jail_id = 7;
	l.root_fd = -1;
	assert_int_equal(rt_plan_vmm_argv(&l, &a, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "rootfs share is missing"));
	l.root_fd = 1;
	assert_int_equal(rt_plan_vmm_argv(&l, &a, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "descriptor 1 is stdio's"));
	/* a restore resumes the checkpoint's snapshot, the same devices */
	l.root_fd = 5;
	l.restore = "/var/lib/containers/c1/checkpoint";
	assert_int_equal(rt_plan_vmm_argv(&l, &a, &e), 0);
	assert_string_equal(a.argv[a.argc - 8], "--restore");
	assert_string_equal(a.argv[a.argc - 7], "/var/lib/containers/c1/checkpoint");
	l.restore = "checkpoint";
	assert_int_equal(rt_plan_vmm_argv(&l, &a, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "--image-path: want an absolute path"));
}

/* netavark's interface as the VM's NIC and kiln-init's parameters. */
static void test_net(void **state)
{
	struct nl_iface f = { .link = { .index = 2,
					.name = "eth0",
					.mac = { 0x0a, 0x58, 0x0a, 0x58, 0x00, 0x05 },
					.has_mac = true,
					.mtu = 1500 } };
	char net[RT_NET_OPT_MAX];

	(void)state;
	f.addrs[0] = (struct nl_addr){ AF_INET6, { 0xfd, [15] = 5 }, 64 };
	f.addrs[1] = (struct nl_addr){ AF_INET, { 10, 88, 0, 5 }, 16 };
	f.naddrs = 2;
	f.has_gw4 = true;
	memcpy(f.gw4, "\x0a\x58\x00\x01", 4);
	built(HEAD PROC "}", "c1");
	assert_int_equal(rt_plan_net(&f, "kt0", plan.cmdline, sizeof(plan.cmdline), net, &e), 0);
	assert_string_equal(net, "tap=kt0,mac=0a:58:0a:58:00:05,ip=10.88.0.5/16");
	assert_string_equal(plan.cmdline,
			    "kiln.oci kiln.shares=r:/run/kiln/root "
			    "kiln.ip=10.88.0.5/16 kiln.gw=10.88.0.1 kiln.mtu=1500");
	rt_plan_free(&plan);
	/* IPv6 only: not yet */
	f.naddrs = 1;
	built(HEAD PROC "}", "c1");
	assert_int_equal(rt_plan_net(&f, "kt0", plan.cmdline, sizeof(plan.cmdline), net, &e),
			 -EINVAL);
	assert_non_null(strstr(e.msg, "eth0 has no IPv4 address"));
	f.naddrs = 2;
	f.addrs[1].prefix = 32; /* point-to-point CNIs (Calico): not yet */
	assert_int_equal(rt_plan_net(&f, "kt0", plan.cmdline, sizeof(plan.cmdline), net, &e),
			 -EINVAL);
	assert_non_null(strstr(e.msg, "eth0: a /32 IPv4 address is not supported yet"));
	f.addrs[1].prefix = 16;
	f.link.mtu = 40;
	assert_int_equal(rt_plan_net(&f, "kt0", plan.cmdline, sizeof(plan.cmdline), net, &e),
			 -EINVAL);
	assert_non_null(strstr(e.msg, "MTU 40 is outside 68..65535"));
	rt_plan_free(&plan);
	rt_config_free(&cfg);
}

/* update against a VM of 512 MiB and 2 vCPUs: what reaches cpu.max,
 * and what a running VM cannot take. */
static void test_update(void **state)
{
	const struct rt_sizing boot = { .mem_mib = 512, .cpus = 2, .cpu_period = 100000 };
	struct rt_resources r = { .memory_limit = -1, .cpu_quota = -1, .pids_limit = -1 };
	char cpu[RT_CPU_MAX_LEN];

	(void)state;
	assert_int_equal(rt_plan_update(&boot, &r, "max 100000", cpu, &e), 0); /* nothing */
	r.cpu_quota = 150000;
	r.cpu_quota_given = true;
	assert_int_equal(rt_plan_update(&boot, &r, "max 100000", cpu, &e), 1);
	assert_string_equal(cpu, "150000"); /* the kernel keeps the period */
	r.cpu_period = 50000;
	assert_int_equal(rt_plan_update(&boot, &r, NULL, cpu, &e), 1);
	assert_string_equal(cpu, "150000 50000");
	r.cpu_quota = -1; /* named unlimited */
	assert_int_equal(rt_plan_update(&boot, &r, "150000 50000", cpu, &e), 1);
	assert_string_equal(cpu, "max 50000");
	r.cpu_quota_given = false; /* a period alone keeps the quota there is */
	r.cpu_period = 200000;
	assert_int_equal(rt_plan_update(&boot, &r, "150000 50000", cpu, &e), 1);
	assert_string_equal(cpu, "150000 200000");
	assert_int_equal(rt_plan_update(&boot, &r, NULL, cpu, &e), 1);
	assert_string_equal(cpu, "max 200000");
	r.cpu_period = 0;
	r.memory_limit = 512LL << 20; /* the RAM itself, or more: taken */
	assert_int_equal(rt_plan_update(&boot, &r, NULL, cpu, &e), 0);
	r.memory_limit = (511LL << 20) + 1; /* rounds up to 512 MiB */
	assert_int_equal(rt_plan_update(&boot, &r, NULL, cpu, &e), 0);
	r.memory_limit = 511LL << 20;
	assert_int_equal(rt_plan_update(&boot, &r, NULL, cpu, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "below the VM's RAM (512 MiB"));
	r.memory_limit = -1;
	r.cpuset_cpus = "0-1";
	assert_int_equal(rt_plan_update(&boot, &r, NULL, cpu, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "2 vCPUs are fixed at boot"));
	r.cpuset_cpus = NULL;
	/* pids: the guest's (the caller's ctr_update), bounded */
	r.pids_limit = 100;
	assert_int_equal(rt_plan_update(&boot, &r, NULL, cpu, &e), 0);
	r.pids_limit = AGENT_CTR_PIDS_MAX + 1LL;
	assert_int_equal(rt_plan_update(&boot, &r, NULL, cpu, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "above the guest kernel's"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizing),        cmocka_unit_test(test_cgroup),
		cmocka_unit_test(test_ctr_create),    cmocka_unit_test(test_pod),
		cmocka_unit_test(test_pids),          cmocka_unit_test(test_ctr_create_privileges),
		cmocka_unit_test(test_podman_mounts), cmocka_unit_test(test_build_refusals),
		cmocka_unit_test(test_update),        cmocka_unit_test(test_vmm_argv),
		cmocka_unit_test(test_net),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
