import axios, { AxiosError, type AxiosInstance, type AxiosRequestConfig } from "axios";
import { AssessdError } from "./errors.js";
import { operationTable, type OperationId, type Operations } from "./operations.js";

/** A bearer token, or a function returning one (called for every request). */
export type TokenSource = string | (() => string | Promise<string>);

/** Options of createClient. */
export interface ClientOptions {
  /** The API's base URL, e.g. https://assessd.example.com. */
  baseURL: string;
  /** An API key (ak_...). */
  apiKey?: string;
  /** An OAuth access token, or a function returning the current one. */
  accessToken?: TokenSource;
  /**
   * Opt-in automatic refresh: called once when a request is answered 401
   * (an expired access token); it returns a fresh access token and the
   * request is retried with it. See oauth.refreshingTokenSource.
   */
  refresh?: () => Promise<string>;
  /** An axios instance to send requests with (defaults to a new one). */
  axios?: AxiosInstance;
  /**
   * How many times a call is sent again after a failure that ran nothing, or that it is safe to
   * resend (default 2; 0 turns resending off). A GET, or a POST, PUT or PATCH carrying an
   * Idempotency-Key, is resent when no answer arrived (a dropped connection, a timeout) and on 409
   * IDEMPOTENCY_KEY_IN_USE, 429, 502, 503 and 504; any other call only on 429, which the API answers
   * before running anything. An answer replayed from a key (Idempotent-Replayed: true) is final. The wait is the answer's Retry-After, else half a second doubling on
   * each attempt, with jitter; at most maxRetryDelayMs.
   */
  maxRetries?: number;
  /** The longest wait before a call is sent again, in milliseconds (default 20000). */
  maxRetryDelayMs?: number;
  /**
   * Whether each POST, PUT and PATCH that takes an Idempotency-Key gets a fresh one (a UUID), the same on
   * every attempt, unless the call's config names its own (default true): a write resent after a
   * lost answer then runs once.
   */
  idempotencyKeys?: boolean;
}

/** The SDK client: one method per API operation. */
export type AssessdClient = Operations;

/** Creates a client authenticated with an API key or an access token. */
export function createClient(options: ClientOptions): AssessdClient {
  const http = options.axios ?? axios.create();
  const maxRetries = options.maxRetries ?? 2;
  const maxRetryDelayMs = options.maxRetryDelayMs ?? 20_000;
  let token: TokenSource | undefined = options.apiKey ?? options.accessToken;
  const bearer = async () => (typeof token === "function" ? await token() : token);

  async function send(id: OperationId, params: Record<string, unknown> = {}, config: AxiosRequestConfig = {}, retried = false): Promise<unknown> {
    const op = operationTable[id];
    const rest: Record<string, unknown> = { ...params };
    let url = op.path as string;
    for (const name of op.pathParams) {
      url = url.replace(`{${name}}`, encodeURIComponent(String(rest[name])));
      delete rest[name];
    }
    const query: Record<string, unknown> = {};
    for (const name of op.queryParams) {
      if (rest[name] !== undefined) query[name] = rest[name];
      delete rest[name];
    }
    const headers: Record<string, string> = {};
    const auth = await bearer();
    if (auth && !url.startsWith("/oauth/token") && !url.startsWith("/oauth/revoke") && !url.startsWith("/oauth/introspect")) {
      headers.Authorization = `Bearer ${auth}`;
    }
    let data: unknown;
    if (op.body === "json") {
      data = rest;
      headers["Content-Type"] = "application/json";
    } else if (op.body === "form") {
      data = new URLSearchParams(Object.entries(rest).filter(([, v]) => v !== undefined).map(([k, v]) => [k, String(v)]));
    }
    const given = { ...(config.headers as Record<string, string> | undefined) };
    const keyed = Object.keys(given).some((name) => name.toLowerCase() === "idempotency-key");
    if (op.keyed && !keyed && options.idempotencyKeys !== false) {
      headers["Idempotency-Key"] = globalThis.crypto.randomUUID();
    }
    const body = config.data ?? data;
    // A stream cannot be sent twice.
    const resendable = (op.method === "get" || (op.keyed && (keyed || "Idempotency-Key" in headers))) && !isStream(body);
    for (let attempt = 0; ; attempt++) {
      try {
        const res = await http.request({
          baseURL: options.baseURL,
          ...config,
          url,
          method: op.method,
          params: { ...query, ...config.params },
          // Binary answers (a PDF, a zip) arrive as an ArrayBuffer.
          ...(op.response === "binary" ? { responseType: "arraybuffer" as const } : {}),
          // A body the caller gives in config (a zip to import) is sent as is.
          data: body,
          headers: { ...headers, ...given },
        });
        return op.response === "binary" ? arrayBuffer(res.data) : res.data;
      } catch (err) {
        if (!(err instanceof AxiosError)) throw err;
        if (err.response?.status === 401 && options.refresh && !retried) {
          token = await options.refresh();
          return send(id, params, config, true);
        }
        if (attempt >= maxRetries || !worthResending(err, resendable)) throw new AssessdError(err);
        await sleep(retryDelay(err, attempt, maxRetryDelayMs));
      }
    }
  }

  const client: Record<string, unknown> = {};
  for (const id of Object.keys(operationTable) as OperationId[]) {
    client[id] = (params?: Record<string, unknown>, config?: AxiosRequestConfig) => send(id, params, config);
  }
  return client as unknown as AssessdClient;
}

/** Statuses after which a call that is safe to resend is sent again: nothing ran, or a proxy lost it. */
const resentAfter = new Set([429, 502, 503, 504]);

/** Whether a call that failed with err is sent again; resendable: it is a GET or carries an Idempotency-Key. */
function worthResending(err: AxiosError, resendable: boolean): boolean {
  const status = err.response?.status;
  // A replayed answer is the one the key keeps: sending again gets it again.
  if (err.response?.headers?.["idempotent-replayed"] === "true") return false;
  if (status === 429) return true;
  if (!resendable) return false;
  if (status === undefined) return err.code !== AxiosError.ERR_CANCELED;
  if (status === 409) return new AssessdError(err).reason === "IDEMPOTENCY_KEY_IN_USE";
  return resentAfter.has(status);
}

/** The wait before attempt+1: the answer's Retry-After, else 0.5 s doubling, with jitter; at most max. */
function retryDelay(err: AxiosError, attempt: number, max: number): number {
  const after = Number(err.response?.headers?.["retry-after"]);
  const ms = Number.isFinite(after) && after >= 0 ? after * 1000 : 500 * 2 ** attempt * (0.5 + Math.random() / 2);
  return Math.min(ms, max);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function isStream(body: unknown): boolean {
  return typeof (body as { pipe?: unknown } | undefined)?.pipe === "function";
}

/** The bytes of a binary answer as an ArrayBuffer: browsers give one, Node a Buffer (a view of a shared pool). */
function arrayBuffer(data: ArrayBuffer | Uint8Array): ArrayBuffer {
  if (data instanceof ArrayBuffer) return data;
  return data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength) as ArrayBuffer;
}
