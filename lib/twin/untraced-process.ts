/**
 * Imported first by the processes that host the twin (npm start, the admin CLI, the bench): they load the product's
 * modules, and with them the X-Ray SDK, whose context tracking puts async hooks on every promise of the process
 * (the twin's API server and front doors included) unless it starts in manual mode. Nothing is traced locally.
 * The functions' workers get the same setting from their environment (lambda/function-environment.ts).
 */
process.env.AWS_XRAY_MANUAL_MODE ??= '1';
// Node 20 is what the twin and the CLI run on; the SDK's notice about its future Node 22 floor is known (the lockfile
// pins the SDK), and the CLI's stderr carries what an operator must read.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
