// Typed usage of the SDK, checked by `npm run typecheck` (tsc --noEmit).
// Each @ts-expect-error line must fail to compile: if one compiles, tsc
// reports the unused directive and the check fails (a negative type test).
import { createClient, paginate, type AssessdClient } from "../src/index.js";

export async function usage(client: AssessdClient): Promise<void> {
  const user = await client.getUser({ id: "usr_01" });
  const name: string | undefined = user.name;
  await client.updateUser({ id: "usr_01", metadata: { grade: "7" } }, { headers: { "X-Trace": "1" }, timeout: 5000 });
  const page = await client.listUsers({ pageSize: 20 });
  page.users?.map((u) => u.email);
  for await (const u of paginate(client.listUsers, { pageSize: 50 })) {
    const email: string | undefined = u.email;
    void email;
  }
  await client.updateOrg({ settings: { aiRegion: "eu" } });
  void name;

  // @ts-expect-error the path parameter id is required
  await client.getUser({});
  // @ts-expect-error ids are strings
  await client.getUser({ id: 42 });
  // @ts-expect-error unknown operations do not exist
  await client.getUsers({ id: "x" });
  // @ts-expect-error pageSize is a number
  await client.listUsers({ pageSize: "20" });
}

createClient({ baseURL: "https://assessd.example", apiKey: "ak_x" });
createClient({ baseURL: "https://assessd.example", accessToken: async () => "token" });
