let count = 0
const button = document.getElementById('count')
button.addEventListener('click', () => {
  count++
  button.textContent = `count is ${count}`
})
