import React, { useState } from "react";
import type { FC } from "react";
import { Button } from "@/components/ui/button";
import * as Icons from "./icons";

/** Props of the counter. */
export interface CounterProps {
  initial?: number;
  onChange?: (n: number) => void;
}

/**
 * A counter.
 * @param props - the props
 * @returns the element
 */
export const Counter: FC<CounterProps> = ({ initial = 0, onChange }) => {
  const [count, setCount] = useState<number>(initial);
  // NOTE: setCount is async, hence the callback form.
  const increment = () => setCount((c) => c + 1);
  return (
    <div className="counter">
      <Icons.Plus />
      <Button onClick={increment}>{count}</Button>
      <span>{formatCount(count)}</span>
    </div>
  );
};

export default function App() {
  return <Counter initial={1} />;
}
