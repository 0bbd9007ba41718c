// A module resolution hook (`module.register`): the SDK's `import … from "ulid"` gets
// `workflow-devkit/ulid.js`, which imports the real package as `ulid-original`.

const SHIM = new URL("./ulid.js", import.meta.url).href;

export async function resolve(specifier, context, next) {
  if (specifier === "ulid" && context.parentURL !== SHIM) return { url: SHIM, shortCircuit: true };
  if (specifier === "ulid-original") return next("ulid", context);
  return next(specifier, context);
}
