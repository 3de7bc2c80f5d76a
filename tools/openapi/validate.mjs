// Validates an OpenAPI description with @apidevtools/swagger-parser.
import SwaggerParser from "@apidevtools/swagger-parser";

const file = process.argv[2];
try {
  const api = await SwaggerParser.validate(file);
  console.log(`${file}: valid ${api.openapi ?? api.swagger}, ${Object.keys(api.paths).length} paths`);
} catch (err) {
  console.error(`${file}: ${err.message}`);
  process.exit(1);
}
