import { useState } from 'react'

export default function App() {
  const [count, setCount] = useState(0)
  return (
    <main>
      <h1 id="title">Hello from hutch</h1>
      <p>Edit <code>src/App.jsx</code> and save: the page updates in place.</p>
      <button onClick={() => setCount((c) => c + 1)}>count is {count}</button>
    </main>
  )
}
