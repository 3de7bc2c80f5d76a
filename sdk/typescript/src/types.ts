import type { operations } from "./schema.js";

type Op<K extends keyof operations> = operations[K];
/** {} for a part the operation does not have (never or undefined). */
type Part<T> = [T] extends [never] ? {} : [T] extends [undefined] ? {} : NonNullable<T>;
type Simplify<T> = { [K in keyof T]: T[K] } & {};

type PathOf<K extends keyof operations> = Op<K> extends { parameters: { path?: infer P } } ? Part<P> : {};
type QueryOf<K extends keyof operations> = Op<K> extends { parameters: { query?: infer Q } } ? Part<Q> : {};
type BodyOf<K extends keyof operations> = Op<K> extends { requestBody?: infer B }
  ? Part<B> extends { content: infer C } ? (C extends { "application/json": infer J } ? J : C extends { "application/x-www-form-urlencoded": infer F } ? F : {}) : {}
  : {};

/** An operation's path, query and body parameters, in one object. */
export type Params<K extends keyof operations> = Simplify<PathOf<K> & QueryOf<K> & BodyOf<K>>;

/** An operation's success body: its JSON, or the bytes of a download (any other media type). */
export type Result<K extends keyof operations> = Op<K>["responses"] extends { 200: { content: infer C } }
  ? [Exclude<keyof C, "application/json">] extends [never] ? C extends { "application/json": infer J } ? J : unknown : ArrayBuffer
  : void;

/** The google.rpc.Status error body of the API. */
export interface Status {
  code: number;
  message: string;
  details?: Array<{ "@type": string; [key: string]: unknown }>;
}
