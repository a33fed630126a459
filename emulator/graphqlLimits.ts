// Limits on a /dashboard/graphql request, all checked before execution: the query's size,
// its nesting (scanned before parsing, so graphql-js's recursive parser never overflows
// the stack), its token count (graphql-js's own maxTokens), and then on the parsed
// document (before validation, whose overlapping-fields rule is quadratic in aliases) its
// selection depth and its cost. During execution a time budget bounds what is left.
import {
  GraphQLError, GraphQLList, GraphQLNonNull, GraphQLObjectType, Kind, defaultFieldResolver, getNamedType,
  type DocumentNode, type FragmentDefinitionNode, type GraphQLFieldResolver, type GraphQLSchema, type GraphQLType, type SelectionSetNode,
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
  /** Wall time for executing one request, in milliseconds (the emulator's default; an option). */
  timeBudgetMs: 2000,
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
        const end = query.indexOf('"""', i + 3);
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
 * Depth and cost of the operations in `document`, fragments expanded (each fragment's cost
 * is computed once, so a fragment fan-out cannot make this walk exponential; a cycle, which
 * validation would refuse later, counts as over the limit).
 */
export function checkDocumentCost(schema: GraphQLSchema, document: DocumentNode): void {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  const memo = new Map<string, { cost: number; depth: number }>();
  const inProgress = new Set<string>();
  const over = { cost: GRAPHQL_LIMITS.maxCost + 1, depth: GRAPHQL_LIMITS.maxDepth + 1 };

  const walk = (selectionSet: SelectionSetNode, parent: GraphQLObjectType | undefined): { cost: number; depth: number } => {
    let cost = 0;
    let depth = 0;
    for (const selection of selectionSet.selections) {
      let part: { cost: number; depth: number };
      if (selection.kind === Kind.FIELD) {
        const field = parent?.getFields()[selection.name.value];
        const child = selection.selectionSet
          ? walk(selection.selectionSet, (field ? getNamedType(field.type) : undefined) as GraphQLObjectType | undefined)
          : { cost: 0, depth: 0 };
        part = { cost: 1 + (field && isList(field.type) ? GRAPHQL_LIMITS.listFactor : 1) * child.cost, depth: 1 + child.depth };
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        part = walk(selection.selectionSet, parent);
      } else {
        const name = selection.name.value;
        const fragment = fragments.get(name);
        if (!fragment) part = { cost: 0, depth: 0 };
        else if (inProgress.has(name)) part = over;
        else {
          let known = memo.get(name);
          if (!known) {
            inProgress.add(name);
            known = walk(fragment.selectionSet, schema.getType(fragment.typeCondition.name.value) as GraphQLObjectType | undefined);
            inProgress.delete(name);
            memo.set(name, known);
          }
          part = known;
        }
      }
      cost += part.cost;
      depth = Math.max(depth, part.depth);
      if (cost > GRAPHQL_LIMITS.maxCost || depth > GRAPHQL_LIMITS.maxDepth) return { cost, depth };
    }
    return { cost, depth };
  };

  for (const definition of document.definitions) {
    if (definition.kind !== Kind.OPERATION_DEFINITION) continue;
    const root = definition.operation === "mutation" ? schema.getMutationType() : definition.operation === "subscription" ? schema.getSubscriptionType() : schema.getQueryType();
    const { cost, depth } = walk(definition.selectionSet, root ?? undefined);
    if (depth > GRAPHQL_LIMITS.maxDepth) {
      throw new GraphQLLimitError("QUERY_TOO_DEEP", `selections nest deeper than ${GRAPHQL_LIMITS.maxDepth} levels`);
    }
    if (cost > GRAPHQL_LIMITS.maxCost) {
      throw new GraphQLLimitError("QUERY_TOO_COSTLY", `the query costs more than ${GRAPHQL_LIMITS.maxCost} (each field counts 1, a list's selections ${GRAPHQL_LIMITS.listFactor} times); ask for fewer fields or aliases`);
    }
  }
}

/** The execution context's deadline (ms since the epoch, from Date.now()). */
export interface Deadline {
  deadline: number;
}

/**
 * Wraps every field resolver of `schema` so that a field started after the request's
 * deadline fails with TIME_BUDGET_EXCEEDED. The fields are non-null, so the first such
 * error ends the whole execution (it cannot pile up one error per remaining field).
 */
export function enforceTimeBudget(schema: GraphQLSchema): void {
  for (const type of Object.values(schema.getTypeMap())) {
    if (!(type instanceof GraphQLObjectType) || type.name.startsWith("__")) continue;
    for (const field of Object.values(type.getFields())) {
      const resolve: GraphQLFieldResolver<unknown, Deadline> = field.resolve ?? defaultFieldResolver;
      field.resolve = (source, args, context, info) => {
        if (Date.now() > context.deadline) {
          throw new GraphQLError("the request ran past its time budget", { extensions: { code: "TIME_BUDGET_EXCEEDED" } });
        }
        return resolve(source, args, context, info);
      };
    }
  }
}
