// Marks dist/cjs as CommonJS (the package itself is "type": "module").
import { writeFileSync } from "node:fs";
writeFileSync("dist/cjs/package.json", JSON.stringify({ type: "commonjs" }) + "\n");
