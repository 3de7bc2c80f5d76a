// SDK tests against a real assessd. The Go test TestTypeScriptSDK (app
// package) starts the server, seeds an organization and runs these with:
// ASSESSD_URL, ASSESSD_API_KEY (an owner's key), ASSESSD_CLIENT_ID,
// ASSESSD_CLIENT_SECRET, ASSESSD_REDIRECT_URI, ASSESSD_LOGIN_EMAIL and
// ASSESSD_LOGIN_PASSWORD.
import { test } from "node:test";
import assert from "node:assert/strict";
import axios, { AxiosError } from "axios";
import {
  AssessdError, authorizeUrl, createClient, exchangeCode, paginate, refreshingTokenSource, revokeToken,
} from "../dist/esm/index.js";

const env = process.env;
const baseURL = env.ASSESSD_URL;
const client = createClient({ baseURL, apiKey: env.ASSESSD_API_KEY });
const oauthClient = { baseURL, clientId: env.ASSESSD_CLIENT_ID, clientSecret: env.ASSESSD_CLIENT_SECRET };

test("users, org and audit log methods", async () => {
  const me = await client.getMe();
  assert.match(me.id, /^usr_/);
  const org = await client.getOrg();
  assert.equal(org.id, me.orgId);
  const created = await client.createUser({ email: "sdk@example.com", name: "SDK", role: "student", metadata: { grade: "7" } });
  const updated = await client.updateUser({ id: created.id, metadata: { grade: null, team: "red" } });
  assert.deepEqual(updated.metadata, { team: "red" });
  assert.equal((await client.getUser({ id: created.id })).email, "sdk@example.com");
  const renamed = await client.updateOrg({ name: "Renamed by the SDK" });
  assert.equal(renamed.name, "Renamed by the SDK");
  const logs = await client.listAuditLogs({ action: "user.created", targetId: created.id });
  assert.equal(logs.auditLogs.length, 1);
  await client.deleteUser({ id: created.id });
});

test("a non-2xx answer rejects with AssessdError", async () => {
  await assert.rejects(client.getUser({ id: "usr_nope" }), (err) => {
    assert.ok(err instanceof AssessdError);
    assert.equal(err.status, 400);
    assert.equal(err.code, 3);
    assert.equal(err.fieldViolations[0].field, "id");
    assert.ok(err.axiosError.isAxiosError);
    return true;
  });
  await assert.rejects(client.getUser({ id: "usr_01ARZ3NDEKTSV4RRFFQ69G5FAV" }), (err) => err.status === 404 && err.reason === "USER_NOT_FOUND");
  const anonymous = createClient({ baseURL });
  await assert.rejects(anonymous.getMe(), (err) => err.status === 401);
});

test("the axios config argument applies to the call", async () => {
  let echoed;
  await client.getMe(undefined, {
    headers: { "X-Request-Id": "sdk-trace-42" },
    transformResponse: [(data, headers) => { echoed = headers["x-request-id"]; return JSON.parse(data); }],
  });
  assert.equal(echoed, "sdk-trace-42");
  // A refused connection (a closed loopback port) rejects with status 0.
  await assert.rejects(client.getMe(undefined, { baseURL: "http://127.0.0.1:1" }),
    (err) => err instanceof AssessdError && err.status === 0);
});

test("paginate walks every page", async () => {
  const ids = [];
  for (let i = 0; i < 5; i++) {
    ids.push((await client.createUser({ email: `page${i}@example.com`, name: `P${i}` })).id);
  }
  const seen = [];
  for await (const user of paginate(client.listUsers, { pageSize: 2 })) seen.push(user.id);
  for (const id of ids) assert.ok(seen.includes(id), `paginate missed ${id}`);
  assert.equal(new Set(seen).size, seen.length);
});

// signIn walks the authorization URL like a browser: login form, consent,
// and back to the app's redirect URI, whose query it returns.
async function signIn(url) {
  const jar = new Map();
  const cookies = () => [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
  const request = async (target, init = {}) => {
    const res = await fetch(new URL(target, baseURL), { ...init, redirect: "manual", headers: { ...init.headers, cookie: cookies() } });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(";");
      const i = pair.indexOf("=");
      jar.set(pair.slice(0, i), pair.slice(i + 1));
    }
    return res;
  };
  const follow = async (res) => {
    while (res.status >= 300 && res.status < 400) {
      const next = res.headers.get("location");
      if (next.startsWith(env.ASSESSD_REDIRECT_URI)) return new URL(next).searchParams;
      res = await request(next);
    }
    return res;
  };
  const field = (html, name) => html.match(new RegExp(`name="${name}" value="([^"]*)"`))[1];
  const post = (path, form) => request(path, { method: "POST", body: new URLSearchParams(form), headers: { "content-type": "application/x-www-form-urlencoded" } });
  const login = await (await follow(await request(url))).text();
  const consent = await (await follow(await post("/login", {
    csrf: field(login, "csrf"), authRequestID: field(login, "authRequestID"), email: env.ASSESSD_LOGIN_EMAIL, password: env.ASSESSD_LOGIN_PASSWORD,
  }))).text();
  return follow(await post("/consent", { csrf: field(consent, "csrf"), authRequestID: field(consent, "authRequestID"), decision: "approve" }));
}

test("OAuth helpers against assessd's provider", async () => {
  const { url, state, codeVerifier } = await authorizeUrl(oauthClient, { redirectUri: env.ASSESSD_REDIRECT_URI, scope: ["openid", "profile", "offline_access", "users:read"] });
  assert.match(url, /code_challenge_method=S256/);
  const back = await signIn(url);
  assert.equal(back.get("state"), state);
  const tokens = await exchangeCode(oauthClient, { code: back.get("code"), redirectUri: env.ASSESSD_REDIRECT_URI, codeVerifier });
  assert.equal(tokens.expires_in, 86400);
  assert.match(tokens.user_id, /^usr_/);

  const rotated = [];
  const source = refreshingTokenSource(oauthClient, tokens, (t) => rotated.push(t));
  let first = true;
  // An expired token (here: a stale one) is refreshed once, transparently.
  const app = createClient({ baseURL, accessToken: () => (first ? ((first = false), "stale-token") : source.accessToken()), refresh: source.refresh });
  assert.equal((await app.getMe()).id, tokens.user_id);
  assert.equal(rotated.length, 1);
  assert.notEqual(rotated[0].refresh_token, tokens.refresh_token);

  await revokeToken(oauthClient, rotated[0].access_token);
  const revoked = createClient({ baseURL, accessToken: rotated[0].access_token });
  await assert.rejects(revoked.getMe(), (err) => err.status === 401);
});

test("assessment, generation and embed methods", async () => {
  const folder = await client.createFolder({ name: "Biology" });
  const exam = await client.createExam({ name: "Cells", language: "en", folderId: folder.id });
  const question = await client.createQuestion({
    examId: exam.id, type: "true_false", prompt: "Cells have a nucleus.", points: 2, config: { correct: true },
  });
  assert.equal((await client.listQuestions({ examId: exam.id })).questions.length, 1);
  const quality = await client.getQuestionQuality({ examId: exam.id, questionId: question.id });
  assert.equal(typeof quality.score, "number");
  const me = await client.getMe();
  // Resent with its Idempotency-Key (a lost answer), the submission is
  // recorded once and answered the same.
  const submission = { examId: exam.id, userId: me.id, answers: [{ questionId: question.id, value: true }] };
  const once = { headers: { "Idempotency-Key": "sdk-submission-1" } };
  const result = await client.submitResult(submission, once);
  assert.equal(result.status, "graded");
  assert.equal(result.score, 2);
  assert.deepEqual(await client.submitResult(submission, once), result);
  const summary = await client.getResultsSummary({ examId: exam.id });
  assert.equal(summary.count, 1);
  const read = await client.getQuestion({ examId: exam.id, questionId: question.id });
  assert.equal(read.typeDefinition.key, "true_false");
  const owned = await client.createQuestionType({
    key: "sdk_yes_no", name: "Yes or no", configSchema: { type: "object" }, responseProcessing: { condition: "=answer.value = true" },
  });
  assert.ok((await client.listQuestionTypes({})).questionTypes.some((t) => t.id === owned.id));
  // No workflow engine in this test server: the generation waits in the
  // outbox, running, until one answers.
  const generation = await client.createExamGeneration({ subject: "Cells" });
  assert.equal(generation.status, "running");
  assert.equal((await client.getExamGeneration({ id: generation.id })).status, "running");
  const session = await client.createEmbedSession({ flow: "generate-exam", actor: me.id, allowedOrigins: ["https://lms.example.com"] });
  assert.match(session.url, /\/embed\/emb_/);
});

test("export and import return and take packages as bytes", async () => {
  const exam = await client.createExam({ name: "Export", language: "en" });
  await client.createQuestion({ examId: exam.id, type: "true_false", prompt: "Water boils at 100 °C at sea level.", config: { correct: true } });
  const zip = await client.exportExam({ examId: exam.id });
  assert.ok(zip instanceof ArrayBuffer);
  assert.equal(Buffer.from(zip).subarray(0, 2).toString(), "PK");
  const imported = await client.createExamImport({}, { data: zip, headers: { "Content-Type": "application/zip" } });
  assert.match(imported.id, /^imp_/);
  assert.deepEqual(imported.warnings, []);
  const doc = JSON.parse(Buffer.from(await client.exportExam({ examId: exam.id, format: "json" })).toString());
  assert.equal(doc.schema, "assessd.exam/v1");
  const again = await client.createExamImport(doc);
  assert.equal((await client.listQuestions({ examId: again.examId })).questions[0].prompt, "Water boils at 100 °C at sea level.");
});

// losingFirstAnswers returns an axios instance whose first `lost` answers
// to requests matching `matches` are dropped after the server sent them,
// as a dropped connection or a proxy's timeout drops them, and the
// Idempotency-Key of every request it sent.
function losingFirstAnswers(matches, lost = 1) {
  const instance = axios.create();
  const keys = [];
  instance.interceptors.request.use((config) => {
    if (matches(config)) keys.push(config.headers["Idempotency-Key"]);
    return config;
  });
  instance.interceptors.response.use((res) => {
    if (matches(res.config) && lost-- > 0) throw new AxiosError("socket hang up", "ECONNRESET", res.config, res.request);
    return res;
  });
  return { instance, keys };
}

test("a write whose answer was lost is sent again with its key and runs once", async () => {
  const name = `Lost answer ${Date.now()}`;
  const isCreate = (c) => c.method === "post" && c.url === "/exams";
  const { instance, keys } = losingFirstAnswers(isCreate);
  const resending = createClient({ baseURL, apiKey: env.ASSESSD_API_KEY, axios: instance });
  const exam = await resending.createExam({ name, language: "en" });
  assert.equal(keys.length, 2);
  assert.match(keys[0], /^[0-9a-f-]{36}$/);
  assert.equal(keys[1], keys[0]);
  assert.deepEqual((await client.listExams({ q: name })).exams.map((e) => e.id), [exam.id]);

  // Without keys the write is not resent: its answer is lost, and it ran.
  const unkeyed = losingFirstAnswers(isCreate);
  const plain = createClient({ baseURL, apiKey: env.ASSESSD_API_KEY, axios: unkeyed.instance, idempotencyKeys: false });
  await assert.rejects(plain.createExam({ name: `${name} unkeyed`, language: "en" }), (err) => err.status === 0);
  assert.deepEqual(unkeyed.keys, [undefined]);
  assert.equal((await client.listExams({ q: `${name} unkeyed` })).exams.length, 1);
});

test("a read whose answer was lost is sent again, up to maxRetries times", async () => {
  const isMe = (c) => c.url === "/me";
  const twice = losingFirstAnswers(isMe, 2);
  const me = await createClient({ baseURL, apiKey: env.ASSESSD_API_KEY, axios: twice.instance }).getMe();
  assert.match(me.id, /^usr_/);
  assert.equal(twice.keys.length, 3);
  const once = losingFirstAnswers(isMe, 1);
  await assert.rejects(createClient({ baseURL, apiKey: env.ASSESSD_API_KEY, axios: once.instance, maxRetries: 0 }).getMe(),
    (err) => err.status === 0);
});

test("an answer replayed from a key is final, whatever its status", async () => {
  // The key keeps the answer of a write that ran: a 503 it replays is what every resend would get.
  let sent = 0;
  const instance = axios.create();
  instance.interceptors.request.use((config) => (sent++, config));
  instance.interceptors.response.use((res) => {
    const replayed = { ...res, status: 503, headers: { ...res.headers, "idempotent-replayed": "true" },
      data: { code: 14, message: "replayed", details: [] } };
    throw new AxiosError("Request failed with status code 503", "ERR_BAD_RESPONSE", res.config, res.request, replayed);
  });
  const replaying = createClient({ baseURL, apiKey: env.ASSESSD_API_KEY, axios: instance, maxRetryDelayMs: 1 });
  await assert.rejects(replaying.createExam({ name: `Replayed ${Date.now()}`, language: "en" }), (err) => err.status === 503);
  assert.equal(sent, 1);
});

test("calls sent at once with one key run once, and each answers the same", async () => {
  // Those that arrive while the first runs are answered 409 IDEMPOTENCY_KEY_IN_USE and sent again
  // after its Retry-After; the others are answered its stored response.
  const key = `sdk-${Date.now()}`;
  const name = `Concurrent ${key}`;
  const config = { headers: { "Idempotency-Key": key } };
  const exams = await Promise.all(Array.from({ length: 6 }, () => client.createExam({ name, language: "en" }, config)));
  assert.deepEqual(new Set(exams.map((e) => e.id)).size, 1);
  assert.equal((await client.listExams({ q: name })).exams.length, 1);
});
