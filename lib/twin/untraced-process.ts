/**
 * Imported first by the processes that host the twin (npm start, the admin CLI, the bench): they load the product's
 * modules, and with them the X-Ray SDK, whose context tracking puts async hooks on every promise of the process
 * (the twin's API server and front doors included) unless it starts in manual mode. Nothing is traced locally.
 * The functions' workers get the same setting from their environment (lambda/function-environment.ts).
 */
process.env.AWS_XRAY_MANUAL_MODE ??= '1';
