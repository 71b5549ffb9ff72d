// All of the JS SDK's unit tests, with cmocka's summary lines.
import { run } from './runner.mjs';
import './sdk_test.mjs';
import './untar_test.mjs';
import './templates_test.mjs';
import './secrets_test.mjs';
import './egress_test.mjs';
import './mcp_test.mjs';
import './mcp-client/client_test.mjs';
import './package_test.mjs';
import './fuzz_test.mjs';

const ok = await run();
process.exit(ok ? 0 : 1);
