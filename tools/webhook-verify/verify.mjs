// Reads JSON lines {"secret","headers","body"} on stdin (deliveries an
// assessd test captured) and verifies each with the Standard Webhooks
// reference library; prints one line per delivery and exits 1 if any fails.
import { Webhook } from "standardwebhooks";
import { createInterface } from "node:readline";

let failed = 0;
let n = 0;
for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  n++;
  const { secret, headers, body } = JSON.parse(line);
  try {
    const payload = new Webhook(secret).verify(body, headers);
    console.log(`ok ${headers["webhook-id"]} ${payload.type}`);
  } catch (err) {
    failed++;
    console.log(`FAIL ${headers["webhook-id"]}: ${err.message}`);
  }
}
console.log(`${n - failed}/${n} deliveries verified`);
process.exit(failed || n === 0 ? 1 : 0);
