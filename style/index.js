import './base.css';
import '@xyflow/react/dist/style.css';
import './pipelines.css';
