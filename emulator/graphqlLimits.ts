// Limits on a /dashboard/graphql request, all checked before execution: the query's size,
// its nesting (scanned before parsing, so graphql-js's recursive parser never overflows
// the stack), its token count (graphql-js's own maxTokens), and then on the parsed
// document, before validation: its selection depth, its cost, and the work validation's
// overlapping-fields rule would do (quadratic in fields sharing a response name and in
// fragments spread together). During execution a time budget bounds what is left.
import {
  GraphQLEnumType, GraphQLError, GraphQLInputObjectType, GraphQLList, GraphQLNonNull, GraphQLObjectType, Kind, isAbstractType, SchemaMetaFieldDef, TypeMetaFieldDef, TypeNameMetaFieldDef,
  defaultFieldResolver, getNamedType, visit,
  type ASTNode, type DocumentNode, type FieldNode, type FragmentDefinitionNode, type GraphQLField, type GraphQLFieldResolver,
  type GraphQLSchema, type GraphQLType, type SelectionSetNode,
} from "graphql";

export const GRAPHQL_LIMITS = {
  /** UTF-8 bytes of the query text. */
  maxQueryBytes: 16 * 1024,
  /** Nesting of braces, brackets and parentheses in the query text. */
  maxNesting: 32,
  /** Lexical tokens (graphql-js parse option). */
  maxTokens: 4000,
  /** Depth of field selections, fragments expanded. */
  maxDepth: 8,
  /** Cost: each field 1, and a list field's selections count `listFactor` times. */
  maxCost: 1000,
  listFactor: 10,
  /**
   * Cost of the introspection in one document (`__schema`, `__type` and everything under
   * them), priced apart: each field 1, and a list's selections count as many times as the
   * schema's longest such list (19 types, the most fields of a type, …), so the estimate
   * never falls below what execution resolves. graphql-js's getIntrospectionQuery()
   * (what GraphiQL and code generators send) is 19,064 on this schema and executes in
   * 2-18 ms; the limit lets three of them through in one document, not an alias bomb
   * (100 aliased `types { fields { type { fields … } } }` trees are 963,401: 120 ms, 700 KB).
   */
  maxIntrospectionCost: 60_000,
  /**
   * Work units of the overlapping-fields validation (an upper estimate: a field pair 3, a
   * fragment pair 2, a name looked up 1). graphql-js stops that rule itself only at
   * 500,000 units, which is seconds of blocked event loop; 20,000 is tens of milliseconds.
   */
  maxMergeWork: 20_000,
  /**
   * Wall time for executing one request, in milliseconds (the emulator's default; an
   * option). Execution is synchronous: this is how long one request can keep every other
   * client waiting, so it is "a few hundred milliseconds", far above what any real query of
   * this schema needs.
   */
  timeBudgetMs: 250,
} as const;

/** A request refused by a limit: a GraphQL error (code in extensions) answered with 400. */
export class GraphQLLimitError extends Error {
  constructor(readonly code: string, message: string) {
    super(message);
  }
}

/** Size and nesting of the query text, before it is parsed. */
export function checkQueryText(query: string): void {
  const bytes = Buffer.byteLength(query, "utf8");
  if (bytes > GRAPHQL_LIMITS.maxQueryBytes) {
    throw new GraphQLLimitError("QUERY_TOO_LARGE", `the query is ${bytes} bytes; the limit is ${GRAPHQL_LIMITS.maxQueryBytes}`);
  }
  let depth = 0;
  for (let i = 0; i < query.length; i++) {
    const c = query[i];
    if (c === "#") {
      while (i < query.length && query[i] !== "\n" && query[i] !== "\r") i++;
    } else if (c === '"') {
      if (query.startsWith('"""', i)) {
        // A block string ends at the first `"""` not escaped as `\"""`, as the lexer reads it.
        let end = query.indexOf('"""', i + 3);
        while (end > 0 && query[end - 1] === "\\") end = query.indexOf('"""', end + 3);
        i = end < 0 ? query.length : end + 2;
      } else {
        for (i++; i < query.length && query[i] !== '"' && query[i] !== "\n"; i++) if (query[i] === "\\") i++;
      }
    } else if (c === "{" || c === "[" || c === "(") {
      if (++depth > GRAPHQL_LIMITS.maxNesting) {
        throw new GraphQLLimitError("QUERY_TOO_DEEP", `the query nests deeper than ${GRAPHQL_LIMITS.maxNesting} levels`);
      }
    } else if (c === "}" || c === "]" || c === ")") {
      depth = Math.max(0, depth - 1);
    }
  }
}

export const parseOptions = { maxTokens: GRAPHQL_LIMITS.maxTokens, noLocation: false } as const;

function isList(type: GraphQLType): boolean {
  const inner = type instanceof GraphQLNonNull ? type.ofType : type;
  return inner instanceof GraphQLList;
}

/**
 * The longest list each introspection list field can return on `schema` (`fields` is the
 * most fields any type has, and so on): the factor that field's selections are priced at.
 */
const introspectionListSizes = new WeakMap<GraphQLSchema, Map<string, number>>();
function introspectionListSize(schema: GraphQLSchema, field: string): number {
  let sizes = introspectionListSizes.get(schema);
  if (!sizes) {
    const max = (name: string, value: number) => sizes!.set(name, Math.max(sizes!.get(name) ?? 1, value));
    sizes = new Map();
    const types = Object.values(schema.getTypeMap());
    max("types", types.length);
    max("directives", schema.getDirectives().length);
    for (const directive of schema.getDirectives()) {
      max("args", directive.args.length);
      max("locations", directive.locations.length);
    }
    for (const type of types) {
      if ("getFields" in type) {
        const fields = Object.values(type.getFields());
        max(type instanceof GraphQLInputObjectType ? "inputFields" : "fields", fields.length);
        for (const field of fields) if ("args" in field) max("args", field.args.length);
      }
      if ("getInterfaces" in type) max("interfaces", type.getInterfaces().length);
      if (type instanceof GraphQLEnumType) max("enumValues", type.getValues().length);
      if (isAbstractType(type)) max("possibleTypes", schema.getPossibleTypes(type).length);
    }
    introspectionListSizes.set(schema, sizes);
  }
  return sizes.get(field) ?? 1;
}

/**
 * Depth and cost of the operations in `document`, fragments expanded (each fragment's cost
 * is computed once, so a fragment fan-out cannot make this walk exponential; a cycle, which
 * validation would refuse later, counts as over the limit).
 */
export function checkDocumentCost(schema: GraphQLSchema, document: DocumentNode): void {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  interface Price { cost: number; depth: number; introspection: number }
  // Keyed by fragment name and whether it is priced as introspection (see walk).
  const memo = new Map<string, Price>();
  const inProgress = new Set<string>();
  const over: Price = { cost: GRAPHQL_LIMITS.maxCost + 1, depth: GRAPHQL_LIMITS.maxDepth + 1, introspection: GRAPHQL_LIMITS.maxIntrospectionCost + 1 };
  const isOver = (price: Price) =>
    price.cost > GRAPHQL_LIMITS.maxCost || price.depth > GRAPHQL_LIMITS.maxDepth || price.introspection > GRAPHQL_LIMITS.maxIntrospectionCost;

  // Introspection's meta fields are not in Query's field map: without their real types,
  // `__schema { types { fields … } }` would be priced as if it had no lists at all.
  const fieldOf = (parent: GraphQLObjectType | undefined, name: string): GraphQLField<unknown, unknown> | undefined => {
    if (name === TypeNameMetaFieldDef.name) return TypeNameMetaFieldDef;
    if (parent && parent === schema.getQueryType()) {
      if (name === SchemaMetaFieldDef.name) return SchemaMetaFieldDef;
      if (name === TypeMetaFieldDef.name) return TypeMetaFieldDef;
    }
    return parent?.getFields()[name];
  };

  // Under `__schema` and `__type`, a selection is priced in `introspection` with the
  // schema's real list lengths, and adds no depth: the standard introspection query nests
  // `ofType` 9 levels (bounded by the text's nesting limit), and graphql-js's
  // MaxIntrospectionDepthRule refuses `fields { type { fields …` cycles in validation.
  const walk = (selectionSet: SelectionSetNode, parent: GraphQLObjectType | undefined, introspecting: boolean): Price => {
    const total: Price = { cost: 0, depth: 0, introspection: 0 };
    for (const selection of selectionSet.selections) {
      let part: Price;
      if (selection.kind === Kind.FIELD) {
        const field = fieldOf(parent, selection.name.value);
        const meta = field === SchemaMetaFieldDef || field === TypeMetaFieldDef;
        const inner = introspecting || meta;
        const child = selection.selectionSet
          ? walk(selection.selectionSet, (field ? getNamedType(field.type) : undefined) as GraphQLObjectType | undefined, inner)
          : { cost: 0, depth: 0, introspection: 0 };
        const list = field !== undefined && isList(field.type);
        if (inner) {
          const factor = list ? introspectionListSize(schema, selection.name.value) : 1;
          part = { cost: 0, depth: meta ? 1 : 0, introspection: 1 + factor * child.introspection };
        } else {
          const factor = list ? GRAPHQL_LIMITS.listFactor : 1;
          part = { cost: 1 + factor * child.cost, depth: 1 + child.depth, introspection: factor * child.introspection };
        }
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        part = walk(selection.selectionSet, parent, introspecting);
      } else {
        const name = selection.name.value;
        const key = `${introspecting ? "i" : "q"}:${name}`;
        const fragment = fragments.get(name);
        if (!fragment) part = { cost: 0, depth: 0, introspection: 0 };
        else if (inProgress.has(name)) part = over;
        else {
          let known = memo.get(key);
          if (!known) {
            inProgress.add(name);
            known = walk(fragment.selectionSet, schema.getType(fragment.typeCondition.name.value) as GraphQLObjectType | undefined, introspecting);
            inProgress.delete(name);
            memo.set(key, known);
          }
          part = known;
        }
      }
      total.cost += part.cost;
      total.introspection += part.introspection;
      total.depth = Math.max(total.depth, part.depth);
      if (isOver(total)) return total;
    }
    return total;
  };

  for (const definition of document.definitions) {
    if (definition.kind !== Kind.OPERATION_DEFINITION) continue;
    const root = definition.operation === "mutation" ? schema.getMutationType() : definition.operation === "subscription" ? schema.getSubscriptionType() : schema.getQueryType();
    const { cost, depth, introspection } = walk(definition.selectionSet, root ?? undefined, false);
    if (depth > GRAPHQL_LIMITS.maxDepth) {
      throw new GraphQLLimitError("QUERY_TOO_DEEP", `selections nest deeper than ${GRAPHQL_LIMITS.maxDepth} levels`);
    }
    if (cost > GRAPHQL_LIMITS.maxCost) {
      throw new GraphQLLimitError("QUERY_TOO_COSTLY", `the query costs more than ${GRAPHQL_LIMITS.maxCost} (each field counts 1, a list's selections ${GRAPHQL_LIMITS.listFactor} times); ask for fewer fields or aliases`);
    }
    if (introspection > GRAPHQL_LIMITS.maxIntrospectionCost) {
      throw new GraphQLLimitError("QUERY_TOO_COSTLY", `the query's introspection costs more than ${GRAPHQL_LIMITS.maxIntrospectionCost} (each field counts 1, a list's selections as many times as the schema's longest such list); ask for the schema once`);
    }
  }
}

/**
 * Refuses a document on which graphql-js's OverlappingFieldsCanBeMerged rule would work
 * for long. That rule compares every two fields sharing a response name in a selection
 * set, through all of their sub-selections, and every two fragments spread together, in
 * every selection set of the document (unused fragments too, which the cost walk never
 * sees): 500 `viewer { id }` or 440 one-field fragments are within the cost limit and held
 * the event loop 1-2 s. This counts the same comparisons, fragments flattened into the
 * selection sets that spread them (never less than the rule does), and stops counting at
 * the limit, so its own work is bounded by the limit.
 */
export function checkMergeWork(document: DocumentNode): void {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  let work = 0;
  const spend = (units: number) => {
    work += units;
    if (work > GRAPHQL_LIMITS.maxMergeWork) {
      throw new GraphQLLimitError("QUERY_TOO_COMPLEX", "the query repeats too many fields or fragments in one selection (validating it would take too long); ask for each field once");
    }
  };

  // A selection set's fields by response name, inline and named fragments flattened (each
  // fragment once, which also stops at cycles), and the fragments it spreads.
  interface Flat { fields: Map<string, FieldNode[]>; fragments: number }
  const flats = new Map<SelectionSetNode, Flat>();
  const flatten = (selectionSet: SelectionSetNode): Flat => {
    const known = flats.get(selectionSet);
    if (known) return known;
    const flat: Flat = { fields: new Map(), fragments: 0 };
    const seen = new Set<string>();
    const add = (set: SelectionSetNode) => {
      for (const selection of set.selections) {
        spend(1);
        if (selection.kind === Kind.FIELD) {
          const name = (selection.alias ?? selection.name).value;
          const same = flat.fields.get(name);
          if (same) same.push(selection);
          else flat.fields.set(name, [selection]);
        } else if (selection.kind === Kind.INLINE_FRAGMENT) {
          add(selection.selectionSet);
        } else {
          const fragment = fragments.get(selection.name.value);
          if (fragment && !seen.has(fragment.name.value)) {
            seen.add(fragment.name.value);
            flat.fragments++;
            add(fragment.selectionSet);
          }
        }
      }
    };
    add(selectionSet);
    flats.set(selectionSet, flat);
    return flat;
  };
  // Sub-selections nest at most maxDepth fields deep, except through a fragment cycle
  // (`fragment T on __Type { a: ofType { ...T } a: ofType { ...T } }`), which validation
  // refuses anyway: refused here before the recursion could exhaust the stack.
  const comparePair = (a: FieldNode, b: FieldNode, depth: number) => {
    spend(3);
    if (!a.selectionSet || !b.selectionSet) return;
    if (depth > GRAPHQL_LIMITS.maxNesting) spend(Number.POSITIVE_INFINITY);
    compareSets(flatten(a.selectionSet), flatten(b.selectionSet), depth + 1);
  };
  const compareSets = (a: Flat, b: Flat, depth: number) => {
    spend(2 * a.fragments * b.fragments + a.fragments + b.fragments);
    for (const [name, fields] of a.fields) {
      spend(1);
      const others = b.fields.get(name);
      if (others) for (const field of fields) for (const other of others) comparePair(field, other, depth);
    }
  };
  visit(document, {
    SelectionSet(selectionSet, _key, parent) {
      // As the rule: an inline fragment's set is compared as part of its enclosing one.
      if (parent && "kind" in (parent as ASTNode) && (parent as ASTNode).kind === Kind.INLINE_FRAGMENT) return;
      const flat = flatten(selectionSet);
      spend(flat.fragments * flat.fragments);
      for (const fields of flat.fields.values()) {
        for (let i = 0; i < fields.length; i++) for (let j = i + 1; j < fields.length; j++) comparePair(fields[i]!, fields[j]!, 0);
      }
    },
  });
}

/** The execution context's deadline (ms since the epoch, from Date.now()). */
export interface Deadline {
  deadline: number;
}

function checkDeadline(context: Deadline): void {
  if (Date.now() > context.deadline) {
    throw new GraphQLError("the request ran past its time budget", { extensions: { code: "TIME_BUDGET_EXCEEDED" } });
  }
}

/**
 * Wraps every field resolver of `schema` so that a field started after the request's
 * deadline fails with TIME_BUDGET_EXCEEDED, and checks the deadline before each object is
 * completed too (graphql-js calls `isTypeOf` there): `__typename` has no resolver of ours,
 * so `pats { 99 aliases of __typename }` over 5,000 PATs ran past any budget (2-3 s, 6.5 MB)
 * with no field to stop it. A budget error in a non-null field ends the execution; in a
 * nullable one (`token`, `revokedAt`) graphql-js records it and goes on, so without the
 * per-object check every later field of every later PAT failed on its own (544,104 errors,
 * 93 MB, 120 s over 5,000 PATs); with it, at most one object's fields do.
 */
export function enforceTimeBudget(schema: GraphQLSchema): void {
  for (const type of Object.values(schema.getTypeMap())) {
    if (!(type instanceof GraphQLObjectType) || type.name.startsWith("__")) continue;
    const isTypeOf = type.isTypeOf;
    type.isTypeOf = (source, context: Deadline, info) => {
      checkDeadline(context);
      return isTypeOf ? isTypeOf(source, context, info) : true;
    };
    for (const field of Object.values(type.getFields())) {
      const resolve: GraphQLFieldResolver<unknown, Deadline> = field.resolve ?? defaultFieldResolver;
      field.resolve = (source, args, context, info) => {
        checkDeadline(context);
        return resolve(source, args, context, info);
      };
    }
  }
}
