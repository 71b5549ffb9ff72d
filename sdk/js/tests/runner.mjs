// A small test runner that prints cmocka's lines, so that tests/unit/run
// (make unit) counts these tests with the C ones.
const tests = [];

/**
 * fn()'s value and how far the process's arrayBuffers and RSS rose above
 * where they were while it ran (sampled every 2 ms), in MiB.
 */
export async function memoryGrowth(fn) {
  const m0 = process.memoryUsage();
  let peak = m0.arrayBuffers, rssPeak = m0.rss;
  const iv = setInterval(() => {
    const m = process.memoryUsage();
    peak = Math.max(peak, m.arrayBuffers);
    rssPeak = Math.max(rssPeak, m.rss);
  }, 2);
  try {
    const value = await fn();
    return { value, arrayBuffersMib: (peak - m0.arrayBuffers) / 1048576, rssMib: (rssPeak - m0.rss) / 1048576 };
  } finally {
    clearInterval(iv);
  }
}

/** test(name, fn): fn may be async; each test has 20 s. */
export function test(name, fn) { tests.push({ name, fn }); }

export async function run() {
  const failed = [];
  console.log(`[==========] Running ${tests.length} test(s).`);
  for (const t of tests) {
    console.log(`[ RUN      ] ${t.name}`);
    let timer;
    try {
      await Promise.race([
        t.fn(),
        new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('test timed out after 20 s')), 20000); }),
      ]);
      console.log(`[       OK ] ${t.name}`);
    } catch (e) {
      for (const line of String((e && e.stack) || e).split('\n')) console.log(`[  ERROR   ] --- ${line}`);
      console.log(`[  FAILED  ] ${t.name}`);
      failed.push(t.name);
    } finally {
      clearTimeout(timer);
    }
  }
  console.log(`[==========] ${tests.length} test(s) run.`);
  console.log(`[  PASSED  ] ${tests.length - failed.length} test(s).`);
  if (failed.length) {
    console.log(`[  FAILED  ] ${failed.length} test(s), listed above.`);
    for (const n of failed) console.log(`[  FAILED  ] ${n}`);
  }
  return failed.length === 0;
}
