/*
 * api/runtime/rt_config.c: config.json as Podman, containerd and Docker
 * write it (trimmed from what each generates), exec's process.json, the
 * refusals (one line naming the field and why) and the bounds.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <cmocka.h>

#include "api/runtime/rt_config.h"

static struct err e;
static struct rt_config cfg;

static int parse(const char *s)
{
	rt_config_free(&cfg);
	memset(&e, 0, sizeof(e));
	return rt_config_parse(s, strlen(s), &cfg, &e);
}

/* Podman 4.3 (libpod's spec generator), trimmed: every field kiln reads. */
static const char podman[] =
	"{\"ociVersion\":\"1.0.2-dev\","
	"\"process\":{\"user\":{\"uid\":0,\"gid\":0,\"umask\":18,\"additionalGids\":[0,1,2,3,4,6,10]},"
	"\"args\":[\"/bin/sh\",\"-c\",\"echo hi\"],"
	"\"env\":[\"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\",\"TERM=xterm\","
	"\"container=podman\",\"HOSTNAME=f00\",\"HOME=/root\"],"
	"\"cwd\":\"/\",\"capabilities\":{\"bounding\":[\"CAP_CHOWN\",\"CAP_KILL\"],\"effective\":[\"CAP_CHOWN\"]},"
	"\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"hard\":1048576,\"soft\":1048576}],"
	"\"terminal\":false,\"oomScoreAdj\":0,\"apparmorProfile\":\"containers-default-0.50.1\"},"
	"\"root\":{\"path\":\"/var/lib/containers/storage/overlay/abc/merged\"},"
	"\"hostname\":\"f00\","
	"\"mounts\":[{\"destination\":\"/proc\",\"type\":\"proc\",\"source\":\"proc\",\"options\":[\"nosuid\",\"noexec\",\"nodev\"]},"
	"{\"destination\":\"/dev\",\"type\":\"tmpfs\",\"source\":\"tmpfs\",\"options\":[\"nosuid\",\"strictatime\",\"mode=755\",\"size=65536k\"]},"
	"{\"destination\":\"/dev/pts\",\"type\":\"devpts\",\"source\":\"devpts\",\"options\":[\"nosuid\",\"noexec\",\"newinstance\",\"ptmxmode=0666\",\"mode=0620\",\"gid=5\"]},"
	"{\"destination\":\"/dev/mqueue\",\"type\":\"mqueue\",\"source\":\"mqueue\",\"options\":[\"nosuid\",\"noexec\",\"nodev\"]},"
	"{\"destination\":\"/sys\",\"type\":\"sysfs\",\"source\":\"sysfs\",\"options\":[\"nosuid\",\"noexec\",\"nodev\",\"ro\"]},"
	"{\"destination\":\"/sys/fs/cgroup\",\"type\":\"cgroup\",\"source\":\"cgroup\",\"options\":[\"rprivate\",\"nosuid\",\"noexec\",\"nodev\",\"relatime\",\"ro\"]},"
	"{\"destination\":\"/etc/hosts\",\"type\":\"bind\",\"source\":\"/run/containers/storage/overlay-containers/f00/userdata/hosts\",\"options\":[\"bind\",\"rprivate\"]},"
	"{\"destination\":\"/data\",\"type\":\"bind\",\"source\":\"/srv/vol\",\"options\":[\"ro\",\"rbind\",\"rprivate\"]}],"
	"\"annotations\":{\"io.container.manager\":\"libpod\",\"org.opencontainers.image.stopSignal\":\"15\"},"
	"\"linux\":{\"sysctl\":{\"net.ipv4.ping_group_range\":\"0 0\"},"
	"\"resources\":{\"pids\":{\"limit\":2048},\"memory\":{\"limit\":268435456,\"swap\":536870912},"
	"\"cpu\":{\"quota\":150000,\"period\":100000,\"shares\":1024}},"
	"\"cgroupsPath\":\"machine.slice:libpod:f00\","
	"\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"network\",\"path\":\"/run/netns/netns-3f2c\"},"
	"{\"type\":\"ipc\"},{\"type\":\"uts\"},{\"type\":\"mount\"},{\"type\":\"cgroup\"}],"
	"\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[]},"
	"\"maskedPaths\":[\"/proc/acpi\",\"/proc/kcore\"],\"readonlyPaths\":[\"/proc/asound\"]}}";

static void test_podman(void **state)
{
	(void)state;
	assert_int_equal(parse(podman), 0);
	assert_string_equal(cfg.oci_version, "1.0.2-dev");
	assert_string_equal(cfg.root_path, "/var/lib/containers/storage/overlay/abc/merged");
	assert_false(cfg.root_readonly);
	assert_int_equal(cfg.process.nargs, 3);
	assert_string_equal(cfg.process.args[2], "echo hi");
	assert_null(cfg.process.args[3]); /* NULL-terminated for execve */
	assert_int_equal(cfg.process.nenv, 5);
	assert_string_equal(cfg.process.cwd, "/");
	assert_int_equal(cfg.process.uid, 0);
	assert_true(cfg.process.has_umask);
	assert_int_equal(cfg.process.umask, 18);
	assert_int_equal(cfg.process.ngids, 7);
	assert_int_equal(cfg.process.gids[6], 10);
	assert_false(cfg.process.terminal);
	assert_true(cfg.process.privs.has_oom_score_adj);
	assert_int_equal(cfg.process.privs.nrlimits, 1);
	assert_int_equal(cfg.process.privs.rlimits[0].resource, RLIMIT_NOFILE);
	assert_int_equal(cfg.process.privs.rlimits[0].soft, 1048576);
	assert_true(cfg.process.privs.has_caps);
	assert_int_equal(cfg.process.privs.caps[AGENT_CAP_BOUNDING], (1u << 0) | (1u << 5));
	assert_int_equal(cfg.process.privs.caps[AGENT_CAP_EFFECTIVE], 1u << 0);
	assert_int_equal(cfg.process.privs.caps[AGENT_CAP_AMBIENT], 0);
	assert_int_equal(cfg.nsysctl, 1);
	assert_string_equal(cfg.sysctl[0].key, "net.ipv4.ping_group_range");
	assert_string_equal(cfg.sysctl[0].value, "0 0");
	assert_int_equal(cfg.nmasked, 2);
	assert_string_equal(cfg.masked_paths[1], "/proc/kcore");
	assert_int_equal(cfg.nreadonly, 1);
	assert_string_equal(cfg.hostname, "f00");
	assert_int_equal(cfg.nmounts, 8);
	assert_string_equal(cfg.mounts[2].type, "devpts");
	assert_int_equal(cfg.mounts[2].noptions, 6);
	assert_false(cfg.mounts[0].bind);
	assert_true(cfg.mounts[4].readonly);
	assert_true(cfg.mounts[6].bind);
	assert_false(cfg.mounts[6].readonly);
	assert_true(cfg.mounts[7].bind && cfg.mounts[7].readonly);
	assert_string_equal(cfg.mounts[7].source, "/srv/vol");
	assert_int_equal(json_object_size(cfg.annotations), 2);
	assert_string_equal(cfg.cgroups_path, "machine.slice:libpod:f00");
	assert_int_equal(cfg.resources.memory_limit, 268435456);
	assert_int_equal(cfg.resources.cpu_quota, 150000);
	assert_int_equal(cfg.resources.cpu_period, 100000);
	assert_int_equal(cfg.resources.pids_limit, 2048);
	assert_int_equal(cfg.nns, 6);
	assert_string_equal(rt_config_ns(&cfg, RT_NS_NETWORK)->path, "/run/netns/netns-3f2c");
	assert_null(rt_config_ns(&cfg, RT_NS_PID)->path);
	assert_int_equal(cfg.prestart.n, 0);
}

/* containerd 1.6's CRI: the rootfs relative to the bundle, a pod's
 * netns by path, annotations naming the sandbox. */
static const char containerd[] =
	"{\"ociVersion\":\"1.1.0\",\"process\":{\"user\":{\"uid\":65535,\"gid\":65535},"
	"\"args\":[\"/pause\"],\"env\":null,\"cwd\":\"/\",\"noNewPrivileges\":true,\"oomScoreAdj\":-998},"
	"\"root\":{\"path\":\"rootfs\",\"readonly\":true},\"hostname\":\"pod-a\",\"mounts\":null,"
	"\"annotations\":{\"io.kubernetes.cri.container-type\":\"sandbox\","
	"\"io.kubernetes.cri.sandbox-id\":\"5e5\"},"
	"\"linux\":{\"resources\":{\"devices\":[{\"allow\":false,\"access\":\"rwm\"}],"
	"\"cpu\":{\"shares\":2}},\"cgroupsPath\":\"/kubepods/besteffort/pod1/5e5\","
	"\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"ipc\"},{\"type\":\"uts\"},{\"type\":\"mount\"},"
	"{\"type\":\"network\",\"path\":\"/var/run/netns/cni-1c2d\"}],"
	"\"uidMappings\":[],\"rootfsPropagation\":\"rslave\"}}";

static void test_containerd(void **state)
{
	(void)state;
	assert_int_equal(parse(containerd), 0);
	assert_string_equal(cfg.root_path, "rootfs");
	assert_true(cfg.root_readonly);
	assert_int_equal(cfg.process.uid, 65535);
	assert_int_equal(cfg.process.nenv, 0);
	assert_true(cfg.process.privs.no_new_privileges);
	assert_int_equal(cfg.process.privs.oom_score_adj, -998);
	assert_false(cfg.process.privs.has_caps);
	assert_int_equal(cfg.nmounts, 0);
	assert_string_equal(rt_config_ns(&cfg, RT_NS_NETWORK)->path, "/var/run/netns/cni-1c2d");
	assert_null(rt_config_ns(&cfg, RT_NS_CGROUP));
	assert_int_equal(cfg.resources.memory_limit, -1);
	assert_int_equal(cfg.resources.cpu_quota, -1);
	assert_int_equal(cfg.resources.cpu_period, 0);
	assert_int_equal(cfg.resources.pids_limit, -1);
}

/* Docker 20.10: a new netns that libnetwork's prestart hook fills. */
static const char docker[] =
	"{\"ociVersion\":\"1.0.2-dev\",\"process\":{\"terminal\":true,\"consoleSize\":{\"height\":40,"
	"\"width\":120},\"user\":{\"uid\":0,\"gid\":0},\"args\":[\"sh\"],\"env\":[\"PATH=/bin\"],"
	"\"cwd\":\"/\"},\"root\":{\"path\":\"/var/lib/docker/overlay2/x/merged\"},"
	"\"hooks\":{\"prestart\":[{\"path\":\"/usr/sbin/dockerd\",\"args\":[\"libnetwork-setkey\","
	"\"-exec-root=/var/run/docker\",\"c0ffee\",\"4a1b\"]}],"
	"\"poststop\":[{\"path\":\"/usr/bin/cleanup\",\"timeout\":5}]},"
	"\"linux\":{\"resources\":{\"memory\":{\"limit\":-1},\"pids\":{\"limit\":0},"
	"\"blockIO\":{\"weight\":10}},\"cgroupsPath\":\"system.slice:docker:c0ffee\","
	"\"namespaces\":[{\"type\":\"mount\"},{\"type\":\"network\"},{\"type\":\"uts\"},"
	"{\"type\":\"pid\"},{\"type\":\"ipc\"}],\"mountLabel\":\"\"}}";

static void test_docker(void **state)
{
	(void)state;
	assert_int_equal(parse(docker), 0);
	assert_true(cfg.process.terminal);
	assert_int_equal(cfg.process.rows, 40);
	assert_int_equal(cfg.process.cols, 120);
	assert_int_equal(cfg.prestart.n, 1);
	assert_string_equal(cfg.prestart.hooks[0].path, "/usr/sbin/dockerd");
	assert_int_equal(cfg.prestart.hooks[0].nargs, 4);
	assert_null(cfg.prestart.hooks[0].args[4]);
	assert_int_equal(cfg.prestart.hooks[0].timeout, 0);
	assert_int_equal(cfg.poststop.n, 1);
	assert_int_equal(cfg.poststop.hooks[0].timeout, 5);
	assert_null(rt_config_ns(&cfg, RT_NS_NETWORK)->path);
	assert_int_equal(cfg.resources.memory_limit, -1);
	assert_int_equal(cfg.resources.pids_limit, -1);
}

#define PROC "\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\"}"
#define ROOT "\"root\":{\"path\":\"rootfs\"}"
#define MIN(...) "{\"ociVersion\":\"1.0.2\"," ROOT "," PROC __VA_ARGS__ "}"

static void refused(const char *doc, const char *want)
{
	if (parse(doc) != -EINVAL)
		fail_msg("taken: %s", doc);
	if (!strstr(e.msg, want))
		fail_msg("message \"%s\" lacks \"%s\"", e.msg, want);
	assert_null(strchr(e.msg, '\n'));
}

static void test_refusals(void **state)
{
	(void)state;
	assert_int_equal(parse(MIN()), 0);
	/* §2.8: what a VM cannot honour, or kiln does not do yet */
	refused(MIN(",\"linux\":{\"uidMappings\":[{\"containerID\":0,\"hostID\":1000,\"size\":1}]}"),
		"config.json: linux.uidMappings: a user namespace for the container is not "
		"supported yet");
	refused(MIN(",\"linux\":{\"gidMappings\":[{}]}"), "linux.gidMappings: a user namespace");
	refused(MIN(",\"linux\":{\"namespaces\":[{\"type\":\"user\"}]}"),
		"linux.namespaces[0]: a user namespace");
	refused(MIN(",\"linux\":{\"namespaces\":[{\"type\":\"time\"}]}"),
		"linux.namespaces[0]: time namespaces are not supported");
	refused(MIN(",\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"ipc\",\"path\":\"/proc/"
		    "9/ns/ipc\"}]}"),
		"linux.namespaces[1]: joining the ipc namespace at /proc/9/ns/ipc is not "
		"supported (only a pod's further container");
	/* a pod's further container names its sandbox's: taken, not joined */
	assert_int_equal(parse(MIN(
				 ",\"annotations\":{\"io.kubernetes.cri.container-type\":\"container\","
				 "\"io.kubernetes.cri.sandbox-id\":\"p1\"},\"linux\":{\"namespaces\":["
				 "{\"type\":\"ipc\",\"path\":\"/proc/9/ns/ipc\"}]}")),
			 0);
	refused(MIN(",\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"pid\"}]}"),
		"namespace pid is listed twice");
	refused(MIN(",\"linux\":{\"namespaces\":[{\"type\":\"net\"}]}"),
		"linux.namespaces[0].type \"net\" is not a namespace type");
	refused(MIN(",\"linux\":{\"namespaces\":[{\"type\":\"network\",\"path\":\"netns\"}]}"),
		"linux.namespaces[0] \"netns\" is not an absolute path");
	refused(MIN(",\"hooks\":{\"createContainer\":[{\"path\":\"/x\"}]}"),
		"hooks.createContainer is not supported: those hooks run in the container's "
		"namespaces, which are inside a VM");
	refused(MIN(",\"hooks\":{\"startContainer\":[{\"path\":\"/x\"}]}"), "hooks.startContainer");
	refused(MIN(",\"linux\":{\"intelRdt\":{\"closID\":\"x\"}}"),
		"linux.intelRdt is not supported");
	refused(MIN(",\"linux\":{\"resources\":{\"hugepageLimits\":[{\"pageSize\":\"2MB\",\"limit\":1}]}}"),
		"linux.resources.hugepageLimits is not supported");
	refused(MIN(",\"linux\":{\"rootfsPropagation\":\"shared\"}"),
		"linux.rootfsPropagation \"shared\" is not supported");
	/* the document itself */
	refused("[]", "config.json is an array, not an object");
	refused("{\"ociVersion\":\"1.0.2\",", "config.json is not JSON");
	refused(MIN(",\"hostname\":\"a\",\"hostname\":\"b\""), "duplicate");
	refused("{\"ociVersion\":\"2.0.0\"," ROOT "," PROC "}",
		"ociVersion \"2.0.0\" is not supported");
	refused("{" ROOT "," PROC "}", "config.json: ociVersion is missing");
	refused("{\"ociVersion\":\"1.0.0\"," PROC "}", "root is missing");
	refused("{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"\"}," PROC "}",
		"root.path is empty");
	refused("{\"ociVersion\":\"1.0.0\"," ROOT "}", "process is missing");
	/* process */
	refused("{\"ociVersion\":\"1.0\"," ROOT ",\"process\":{\"args\":[],\"cwd\":\"/\"}}",
		"process.args is empty");
	refused("{\"ociVersion\":\"1.0\"," ROOT ",\"process\":{\"args\":[\"\"],\"cwd\":\"/\"}}",
		"process.args is empty");
	refused("{\"ociVersion\":\"1.0\"," ROOT ",\"process\":{\"args\":[\"sh\",1],\"cwd\":\"/\"}}",
		"process.args[1] is an integer, not a string");
	refused("{\"ociVersion\":\"1.0\"," ROOT ",\"process\":{\"args\":\"sh\",\"cwd\":\"/\"}}",
		"process.args is a string, not an array");
	refused("{\"ociVersion\":\"1.0\"," ROOT ",\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\","
		"\"env\":[\"A=1\",\"NOEQUALS\"]}}",
		"process.env[1] \"NOEQUALS\": invalid environment variable: want NAME=VALUE");
	refused("{\"ociVersion\":\"1.0\"," ROOT ",\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\","
		"\"env\":[\"=v\"]}}",
		"process.env[0] \"=v\"");
	refused("{\"ociVersion\":\"1.0\"," ROOT ",\"process\":{\"args\":[\"sh\"]}}",
		"process.cwd is missing");
	refused("{\"ociVersion\":\"1.0\"," ROOT
		",\"process\":{\"args\":[\"sh\"],\"cwd\":\"work\"}}",
		"process.cwd \"work\" is not an absolute path");
	refused("{\"ociVersion\":\"1.0\"," ROOT ",\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\","
		"\"user\":{\"uid\":-1}}}",
		"process.user.uid is -1, outside 0..4294967294");
	refused("{\"ociVersion\":\"1.0\"," ROOT ",\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\","
		"\"user\":{\"uid\":0,\"gid\":0,\"umask\":1024}}}",
		"process.user.umask is 1024, outside 0..511");
	refused("{\"ociVersion\":\"1.0\"," ROOT ",\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\","
		"\"user\":{\"additionalGids\":[1,\"2\"]}}}",
		"process.user.additionalGids[1] is not a gid");
	refused("{\"ociVersion\":\"1.0\"," ROOT ",\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\","
		"\"terminal\":\"yes\"}}",
		"process.terminal is a string, not true or false");
	refused("{\"ociVersion\":\"1.0\"," ROOT ",\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\","
		"\"consoleSize\":{\"height\":70000}}}",
		"process.consoleSize.height is 70000");
	refused("{\"ociVersion\":\"1.0\"," ROOT ",\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\","
		"\"oomScoreAdj\":1001}}",
		"process.oomScoreAdj is 1001");
	/* mounts, hooks, resources */
	refused(MIN(",\"mounts\":[{\"type\":\"tmpfs\"}]"), "mounts[0].destination is missing");
	refused(MIN(",\"mounts\":[{\"destination\":\"tmp\"}]"),
		"mounts[0].destination \"tmp\" is not an absolute path");
	refused(MIN(",\"mounts\":[{\"destination\":\"/a/../etc\",\"type\":\"tmpfs\"}]"),
		"mounts[0].destination \"/a/../etc\" has a '..' component");
	refused(MIN(",\"mounts\":[{\"destination\":\"/..\",\"type\":\"tmpfs\"}]"),
		"'..' component");
	assert_int_equal(parse(MIN(
				 ",\"mounts\":[{\"destination\":\"/a..b/..c\",\"type\":\"tmpfs\"}]")),
			 0);
	refused(MIN(",\"mounts\":[{\"destination\":\"/x\",\"options\":[\"bind\"]}]"),
		"mounts[0] is a bind mount without a source");
	refused(MIN(",\"mounts\":[{\"destination\":\"/x\",\"options\":[\"ro\",7]}]"),
		"mounts[0].options[1] is an integer");
	refused(MIN(",\"mounts\":[1]"), "mounts[0] is an integer, not an object");
	refused(MIN(",\"hooks\":{\"prestart\":[{\"args\":[]}]}"),
		"hooks.prestart[0].path is missing");
	refused(MIN(",\"hooks\":{\"poststart\":[{\"path\":\"hook\"}]}"),
		"hooks.poststart[0].path \"hook\" is not an absolute path");
	refused(MIN(",\"hooks\":{\"poststop\":[{\"path\":\"/h\",\"timeout\":0}]}"),
		"hooks.poststop[0].timeout is 0");
	refused(MIN(",\"linux\":{\"resources\":{\"memory\":{\"limit\":-2}}}"),
		"linux.resources.memory.limit is -2");
	refused(MIN(",\"linux\":{\"resources\":{\"cpu\":{\"quota\":1.5}}}"),
		"linux.resources.cpu.quota is a number with a fraction, not an integer");
	refused(MIN(",\"linux\":{\"cgroupsPath\":7}"), "linux.cgroupsPath is an integer");
	refused(MIN(",\"hostname\":\""
		    "0123456789012345678901234567890123456789012345678901234567890123"
		    "4\""),
		"hostname is longer than 64 bytes");
	refused(MIN(",\"annotations\":{\"a\":true}"), "annotation \"a\" is a boolean");
	rt_config_free(&cfg);
}

/* Lists at their bound pass; one more is refused; the file's bound is
 * checked before parsing. */
static void test_bounds(void **state)
{
	size_t cap = 64 << 10, k;
	char *doc = malloc(RT_CONFIG_ARG_MAX + 4096);

	(void)state;
	for (int extra = 0; extra < 2; extra++) {
		k = (size_t)sprintf(doc,
				    "{\"ociVersion\":\"1.0\"," ROOT ",\"process\":{\"cwd\":\"/\","
				    "\"args\":[\"a\"");
		for (int i = 1; i < RT_CONFIG_LIST_MAX + extra; i++)
			k += (size_t)sprintf(doc + k, ",\"a\"");
		sprintf(doc + k, "]}}");
		assert_true(strlen(doc) < cap);
		if (extra) {
			refused(doc, "process.args has 1025 entries, at most 1024 are allowed");
		} else {
			assert_int_equal(parse(doc), 0);
			assert_int_equal(cfg.process.nargs, RT_CONFIG_LIST_MAX);
		}
	}
	k = (size_t)sprintf(doc,
			    "{\"ociVersion\":\"1.0\"," ROOT ",\"process\":{\"cwd\":\"/\","
			    "\"args\":[\"");
	memset(doc + k, 'x', RT_CONFIG_ARG_MAX + 1);
	sprintf(doc + k + RT_CONFIG_ARG_MAX + 1, "\"]}}");
	refused(doc, "process.args[0] is longer than 131072 bytes");
	rt_config_free(&cfg);
	assert_int_equal(rt_config_parse("{}", RT_CONFIG_FILE_MAX + 1, &cfg, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "config.json is larger than 1048576 bytes"));
	rt_config_free(&cfg);
	free(doc);
}

static void test_process_json(void **state)
{
	struct rt_process p;
	json_t *doc;
	const char *s;

	(void)state;
	/* containerd's exec process (the shim writes it to a temp file) */
	s = "{\"terminal\":false,\"user\":{\"uid\":1000,\"gid\":1000},\"args\":[\"ls\",\"-la\"],"
	    "\"env\":[\"PATH=/bin\"],\"cwd\":\"/work\",\"capabilities\":{}}";
	assert_int_equal(rt_process_parse(s, strlen(s), &p, &doc, &e), 0);
	assert_int_equal(p.nargs, 2);
	assert_int_equal(p.uid, 1000);
	assert_string_equal(p.cwd, "/work");
	rt_process_free(&p);
	json_decref(doc);
	s = "{\"args\":[\"ls\"]}";
	assert_int_equal(rt_process_parse(s, strlen(s), &p, &doc, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "process.json: process.cwd is missing"));
	rt_process_free(&p);
	json_decref(doc);
	s = "[1]";
	assert_int_equal(rt_process_parse(s, strlen(s), &p, &doc, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "process.json is an array"));
	assert_null(doc);
}

/* update --resources: what Podman and containerd's shim pass. */
static void test_resources(void **state)
{
	struct rt_resources r;
	json_t *doc;
	const char *s;

	(void)state;
	s = "{\"memory\":{\"limit\":536870912,\"swap\":1073741824},\"cpu\":{\"quota\":200000,"
	    "\"period\":100000,\"cpus\":\"0-1\"},\"pids\":{\"limit\":500},\"blockIO\":{}}";
	assert_int_equal(rt_resources_parse(s, strlen(s), &r, &doc, &e), 0);
	assert_int_equal(r.memory_limit, 536870912);
	assert_int_equal(r.cpu_quota, 200000);
	assert_int_equal(r.cpu_period, 100000);
	assert_string_equal(r.cpuset_cpus, "0-1");
	assert_int_equal(r.pids_limit, 500);
	json_decref(doc);
	s = "{}";
	assert_int_equal(rt_resources_parse(s, strlen(s), &r, &doc, &e), 0);
	assert_int_equal(r.memory_limit, -1);
	assert_int_equal(r.pids_limit, -1);
	json_decref(doc);
	s = "{\"memory\":{\"limit\":\"512m\"}}";
	assert_int_equal(rt_resources_parse(s, strlen(s), &r, &doc, &e), -EINVAL);
	assert_string_equal(e.msg,
			    "update --resources: linux.resources.memory.limit is a string, "
			    "not an integer");
	json_decref(doc);
	s = "[]";
	assert_int_equal(rt_resources_parse(s, strlen(s), &r, &doc, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "update --resources is an array, not an object"));
	assert_null(doc);
}

/* What `kiln-runtime spec` writes is a config kiln-runtime takes whole. */
static void test_spec_is_accepted(void **state)
{
	char *s;

	(void)state;
	assert_int_equal(rt_state_render_spec(&s, &e), 0);
	assert_int_equal(parse(s), 0);
	assert_string_equal(cfg.root_path, "rootfs");
	assert_true(cfg.root_readonly);
	assert_false(cfg.process.terminal);
	assert_int_equal(cfg.nmounts, 7);
	assert_int_equal(cfg.nns, 6);
	assert_null(rt_config_ns(&cfg, RT_NS_NETWORK)->path);
	free(s);
	rt_config_free(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_podman),           cmocka_unit_test(test_containerd),
		cmocka_unit_test(test_docker),           cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_bounds),           cmocka_unit_test(test_process_json),
		cmocka_unit_test(test_spec_is_accepted), cmocka_unit_test(test_resources),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
