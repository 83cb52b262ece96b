import './base.css';
import '@xyflow/react/dist/style.css';
import './pipelines.css';
import './training.css';
import './finetune.css';
import './tuning.css';
import './deployments.css';
import './labeling.css';
