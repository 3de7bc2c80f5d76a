import type { AxiosRequestConfig } from "axios";

type Page = { nextPageToken?: string };
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type ListMethod = (params: any, config?: AxiosRequestConfig) => Promise<Page>;

/** The element type of the list in a page (users, auditLogs, ...). */
export type ItemOf<R> = { [K in keyof R]-?: NonNullable<R[K]> extends Array<infer I> ? I : never }[keyof R];

/**
 * Iterates over every item of a list operation, fetching pages as needed:
 *
 *   for await (const user of paginate(client.listUsers, { pageSize: 100 })) { ... }
 */
export async function* paginate<F extends ListMethod>(
  list: F,
  params: Parameters<F>[0],
  config?: AxiosRequestConfig,
): AsyncGenerator<ItemOf<Awaited<ReturnType<F>>>> {
  let token: string | undefined = (params as { pageToken?: string } | undefined)?.pageToken;
  do {
    const page = await list({ ...params, pageToken: token }, config);
    for (const value of Object.values(page)) {
      if (Array.isArray(value)) yield* value;
    }
    token = page.nextPageToken || undefined;
  } while (token);
}
