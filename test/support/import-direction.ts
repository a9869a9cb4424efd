// Which imports point the wrong way (docs/architecture.md, "Imports that point up"), from
// dependency-cruiser's JSON: a lower layer importing a higher one, or two modules importing each
// other's code. The shapes of a module (row types in *.tables.ts, forms in *.schemas.ts, pure rules
// in *.rules.ts) are data, and anyone may name them.

export type CruisedModule = { source: string; dependencies: Array<{ resolved: string }> };

const SHAPE = /[.](tables|schemas|rules)[.]ts$/;

/** 0 processes, 1 wiring, 2 the module list, 3 the modules, 4 the modules' kit, 5 adapters and config, 6 pure helpers. */
export function layerOf(file: string): number {
  if (/^src\/(main|serve|cluster)\.ts$/.test(file) || file.startsWith('src/cli/')) return 0;
  if (/^src\/(runtime|app)\.ts$/.test(file)) return 1;
  if (file === 'src/modules/index.ts') return 2;
  if (/^src\/modules\/[^/]+\//.test(file)) return 3;
  if (/^src\/modules\/[^/]+\.ts$/.test(file)) return 4;
  if (file.startsWith('src/shared/')) return 6;
  return 5;
}

const moduleOf = (file: string) => /^src\/modules\/([^/]+)\//.exec(file)?.[1];

/** Every import that points the wrong way, as `from → to`. */
export function wrongWayImports(modules: CruisedModule[]): string[] {
  const edges = modules.flatMap((module) =>
    module.source.startsWith('src/')
      ? module.dependencies
          .filter((dependency) => dependency.resolved.startsWith('src/'))
          .map((dependency) => ({ from: module.source, to: dependency.resolved }))
      : [],
  );
  const wrong: string[] = [];
  for (const { from, to } of edges) {
    const [below, above] = [layerOf(from), layerOf(to)];
    const kitNamesAShape = below === 4 && above === 3 && SHAPE.test(to);
    if (below > above && !kitNamesAShape) wrong.push(`${from} → ${to}`);
  }
  // Between two modules: when each uses the other's code, the direction with fewer imports is wrong.
  const between = new Map<string, string[]>();
  for (const { from, to } of edges) {
    const [a, b] = [moduleOf(from), moduleOf(to)];
    if (!a || !b || a === b || SHAPE.test(to)) continue;
    const key = `${a} ${b}`;
    between.set(key, [...(between.get(key) ?? []), `${from} → ${to}`]);
  }
  for (const [key, imports] of between) {
    const [a, b] = key.split(' ') as [string, string];
    const back = between.get(`${b} ${a}`);
    if (back && (imports.length < back.length || (imports.length === back.length && a < b))) wrong.push(...imports);
  }
  return wrong.sort();
}
