// Prints the text lines @gutenye/ocr-node (PaddleOCR's models on ONNX
// Runtime) reads in an image, one per line: benchmarks/ocr-real.sh's peer.
//   NNP_GUTENYE_DIR=DIR node benchmarks/gutenye-ocr.mjs IMAGE
// DIR is where `npm install @gutenye/ocr-node` ran.
import { pathToFileURL } from 'node:url'
import path from 'node:path'

const dir = process.env.NNP_GUTENYE_DIR
if (!dir || process.argv.length < 3) {
  console.error('usage: NNP_GUTENYE_DIR=DIR node gutenye-ocr.mjs IMAGE')
  process.exit(2)
}
const entry = path.join(dir, 'node_modules', '@gutenye', 'ocr-node', 'build',
  'index.js')
const { default: Ocr } = await import(pathToFileURL(entry).href)
const ocr = await Ocr.create()
for (const line of await ocr.detect(process.argv[2]))
  console.log(line.text)
