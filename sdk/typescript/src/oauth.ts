import axios, { AxiosError } from "axios";
import { AssessdError } from "./errors.js";
import type { components } from "./schema.js";

/** The token endpoint's answer (spec 2.8). */
export type TokenResponse = components["schemas"]["oauth.TokenResponse"];

/** An OAuth client's registration. */
export interface OAuthClient {
  baseURL: string;
  clientId: string;
  /** Omit for public clients (PKCE only). */
  clientSecret?: string;
}

function base64url(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("base64").replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

function randomString(): string {
  return base64url(globalThis.crypto.getRandomValues(new Uint8Array(32)));
}

/**
 * Builds the /oauth/authorize URL with PKCE (S256) and a random state.
 * Keep codeVerifier and state until the redirect comes back; check that its
 * state equals this one.
 */
export async function authorizeUrl(
  client: OAuthClient,
  options: { redirectUri: string; scope: string[]; state?: string; nonce?: string },
): Promise<{ url: string; state: string; codeVerifier: string }> {
  const codeVerifier = randomString();
  const challenge = base64url(new Uint8Array(await globalThis.crypto.subtle.digest("SHA-256", new TextEncoder().encode(codeVerifier))));
  const state = options.state ?? randomString();
  const url = new URL("/oauth/authorize", client.baseURL);
  url.search = new URLSearchParams({
    response_type: "code",
    client_id: client.clientId,
    redirect_uri: options.redirectUri,
    scope: options.scope.join(" "),
    state,
    code_challenge: challenge,
    code_challenge_method: "S256",
    ...(options.nonce ? { nonce: options.nonce } : {}),
  }).toString();
  return { url: url.toString(), state, codeVerifier };
}

async function tokenRequest(client: OAuthClient, path: string, form: Record<string, string>): Promise<unknown> {
  const body = new URLSearchParams({ client_id: client.clientId, ...form });
  if (client.clientSecret) body.set("client_secret", client.clientSecret);
  try {
    const res = await axios.post(new URL(path, client.baseURL).toString(), body);
    return res.data;
  } catch (err) {
    if (err instanceof AxiosError) throw new AssessdError(err);
    throw err;
  }
}

/** Exchanges an authorization code (with its PKCE verifier) for tokens. */
export function exchangeCode(client: OAuthClient, options: { code: string; redirectUri: string; codeVerifier: string }): Promise<TokenResponse> {
  return tokenRequest(client, "/oauth/token", {
    grant_type: "authorization_code", code: options.code, redirect_uri: options.redirectUri, code_verifier: options.codeVerifier,
  }) as Promise<TokenResponse>;
}

/** Exchanges a refresh token for new tokens; the old refresh token stops working. */
export function refreshTokens(client: OAuthClient, refreshToken: string): Promise<TokenResponse> {
  return tokenRequest(client, "/oauth/token", { grant_type: "refresh_token", refresh_token: refreshToken }) as Promise<TokenResponse>;
}

/** Revokes an access or refresh token, and with it every token of its grant (RFC 7009). */
export async function revokeToken(client: OAuthClient, token: string): Promise<void> {
  await tokenRequest(client, "/oauth/revoke", { token });
}

/**
 * Keeps an access token fresh: pass accessToken and refresh of the result to
 * createClient, and an expired token is replaced by refreshing once.
 * onTokens sees every new token pair (store the rotated refresh token).
 */
export function refreshingTokenSource(client: OAuthClient, tokens: TokenResponse, onTokens?: (t: TokenResponse) => void) {
  let current = tokens;
  return {
    accessToken: () => current.access_token,
    refresh: async () => {
      if (!current.refresh_token) throw new Error("no refresh token: request the offline_access scope");
      current = await refreshTokens(client, current.refresh_token);
      onTokens?.(current);
      return current.access_token;
    },
  };
}
