/**
 * @fileoverview Order service.
 */

import type { Options } from "./options";
import Default, { helper as h, type Shape } from './shapes';
import { type A, type B } from "./types";
import * as path from "node:path";
import "./polyfill";
import fs = require("fs");
export { x, y as z } from "./reexport";
export type { T } from "./types";
export * from "./all";
const lazy = import("./lazy");
const legacy = require("legacy-lib");

// eslint-disable-next-line @typescript-eslint/no-explicit-any
declare const window: any;

export const MAX = 10;
let counter = 0, limit: Limit = 5;
const { a, b } = pair;

/**
 * Adds two numbers.
 * @param {number} x - The first.
 * @param {number} y - The second.
 * @returns {number} The sum.
 * @throws {RangeError} When it overflows.
 */
export function add(x: number, y: number): number {
  return x + y;
}

/** A plain doc. */
export default function main(args: string[]): void {
  // TODO(ann): parse the args properly
  const local = 1;
  const inner = (v: Value) => helperFn(v);
  console.log(inner(local));
}

export const fetchOrder = async (id: OrderId): Promise<Order> => {
  // Retry twice so that flaky networks do not fail the import.
  return await api.orders.get(id);
};

const compute = function named(n: number) {
  return n * 2;
};

@Injectable({ providedIn: "root" })
export abstract class OrderService<T extends Entity> extends BaseService<T> implements Service, Disposable {
  private cache: Map<string, Order> = new Map();
  static instances = 0;
  handler = (e: Event) => this.onEvent(e);

  constructor(private readonly http: HttpClient) {
    super(http);
  }

  /** Loads one order. */
  async load(id: string): Promise<Order> {
    const order = new OrderModel(id);
    return this.http.get<Order>(`/orders/${id}`); // FIXME: handle 404
  }

  abstract validate(order: Order): boolean;

  get size(): number {
    return this.cache.size;
  }
}

export interface Repository<K> extends Readable, ns.Writable {
  find(id: K): Promise<Entity | undefined>;
  readonly name: string;
}

export type OrderId = string | number;

export enum Status {
  Open = "open",
  Closed = "closed",
}

namespace Internal {
  export const secret = 42;
  export function hidden(): void {}
}

function overloaded(a: string): string;
function overloaded(a: number): number;
function overloaded(a: any) {
  return a;
}

export default class {}
